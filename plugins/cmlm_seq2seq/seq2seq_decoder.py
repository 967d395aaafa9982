import keras_hub
import numpy as np
import tensorflow as tf
from keras import ops
from keras import tree

from kdplug.data import batches_by_length
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk
from kdplug_plugins.cmlm_seq2seq.row_beam_sampler import RowBeamSampler

STRATEGIES = ("greedy", "beam")


class Seq2SeqDecoder:
    """Greedy or beam-search decoding of a `Seq2SeqModel`: keras-hub's
    `GreedySampler`, or `RowBeamSampler` (keras-hub's beam search, its beams
    reordered by a gather along the rows, which with a decoder cache is
    what a beam step spends its time on; the same tokens).

    The source is encoded once per batch; the encoding travels in the
    sampler's cache (so the beam sampler repeats and reorders it with the
    beams). A model with `decode_cached` keeps its decoder's state there
    too (`decoder_cache()`: the Transformer's self- and cross-attention keys
    and values, the GRU's hidden state): step `t` runs the decoder on token
    `y_{t-1}` alone from the cached state and projects that one state onto
    the vocabulary. With `use_cache=False` (or a model without it) every
    step decodes the whole prefix buffer `[CLS] y_1 .. y_{t-1}` and
    projects position `t - 1`; both give the same tokens (tests/plugins/
    cmlm_seq2seq/test_cmlm_decoding.py), the cache at a fraction of the
    work (bench/seq2seq_decoding.py). Once a row (a beam) has produced
    the end token ([SEP]), every later step gives all its probability to
    [PAD]: a finished beam keeps its score, and the loop stops when every
    row has ended (or the buffer is full). Beams are ranked by summed log
    probabilities, the finished ones chosen among with GNMT's length
    penalty (`length_penalty`, `RowBeamSampler`).

    Args:
        model: a `Seq2SeqModel` (`encode`, `decode_states`, `project`,
            `decoder_length`).
        start_id, end_id, pad_id: the tokenizer's [CLS], [SEP], [PAD] ids.
        strategy: `greedy` or `beam`.
        beam_width: int. Beams (`beam` only).
        length_penalty: float. GNMT's alpha for choosing among the finished
            beams (`beam` only; `RowBeamSampler`; 0: the summed log
            probability).
        use_cache: bool. Decode from the key/value cache when the model has
            one (`decode_cached`).
        sampler: a keras-hub sampler used instead of the strategy's (e.g.
            `keras_hub.samplers.BeamSampler`, which bench/seq2seq_decoding.py
            times against `RowBeamSampler`); its beams, if any, must be
            `beam_width`.

    Examples:

    ```python
    decoder = Seq2SeqDecoder(student, tokenizer.cls_token_id,
                             tokenizer.sep_token_id, tokenizer.pad_token_id,
                             strategy="beam", beam_width=5)
    id_lists = decoder.generate(encoder.source_arrays(["hello world"]))
    ```
    """

    def __init__(self, model, start_id, end_id, pad_id, strategy="greedy",
                 beam_width=5, use_cache=True, sampler=None, length_penalty=0.0):
        if strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {strategy!r}")
        self.model = model
        self.start_id, self.end_id, self.pad_id = int(start_id), int(end_id), int(pad_id)
        self.strategy = strategy
        self.beam_width = int(beam_width)
        self.use_cache = bool(use_cache) and hasattr(model, "decode_cached")
        if sampler is not None:
            self.sampler = sampler
        elif strategy == "beam":
            self.sampler = RowBeamSampler(num_beams=self.beam_width,
                                          length_penalty=length_penalty)
        else:
            self.sampler = keras_hub.samplers.GreedySampler()
        self._generate = tf.function(self._generate_batch, reduce_retracing=True,
                                     autograph=False)

    def _generate_batch(self, token_ids, padding_mask):
        model = self.model
        encoder_mask = ops.cast(padding_mask, "bool")
        encoded = model.encode(token_ids, encoder_mask, training=False)
        batch, length = ops.shape(token_ids)[0], model.decoder_length
        first = ops.arange(length)[None, :] == 0
        prompt = ops.where(first, self.start_id, self.pad_id)
        prompt = ops.cast(ops.broadcast_to(prompt, (batch, length)), "int32")
        prompt_mask = ops.broadcast_to(first, (batch, length))
        forced = ops.where(ops.arange(model.vocabulary_size) == self.pad_id, 0.0, -1e9)

        def finish(logits, prompt, index):
            """A row that has ended gives all its probability to [PAD]."""
            before = ops.arange(length)[None, :] < index
            done = ops.any(ops.logical_and(prompt == self.end_id, before), axis=1)
            return ops.where(done[:, None], forced[None, :], logits)

        if self.use_cache:
            fixed, moving = model.decoder_cache(encoded, encoder_mask)
            # What is the same for every beam of a source (the encoding, the
            # cross-attention's keys and values) stays out of the sampler's
            # cache, which the beam sampler gathers along the beams at every
            # step; repeated here as it repeats its cache (beam-major rows).
            beams = self.beam_width if self.strategy == "beam" else 1
            encoded_b, mask_b, fixed_b = tree.map_structure(
                lambda x: ops.repeat(x, beams, axis=0), (encoded, encoder_mask, fixed))

            def next(prompt, moving, index):
                token = ops.take(prompt, index - 1, axis=1)[:, None]
                states, moving = model.decode_cached(
                    token, index - 1, encoded_b, mask_b, fixed_b, moving)
                logits = finish(model.project(states[:, 0]), prompt, index)
                return logits, None, moving

            cache = moving
        else:
            def next(prompt, cache, index):
                encoded, encoder_mask = cache
                states = model.decode_states(encoded, encoder_mask, prompt,
                                             ops.ones_like(prompt, dtype="bool"))
                logits = model.project(ops.take(states, index - 1, axis=1))
                return finish(logits, prompt, index), None, cache

            cache = (encoded, encoder_mask)
        return self.sampler(next, prompt, cache=cache, index=1,
                            mask=prompt_mask, stop_token_ids=[self.end_id])

    def generate_ids(self, arrays, batch_size=64, progress=None):
        """The decoder buffers `(n, decoder_length)` for encoder inputs
        `{encoder_token_ids, encoder_padding_mask}`, in their order.

        The sources are decoded in batches of similar length (sorted by
        their length): a batch runs until its longest output has ended, and
        output length follows source length. `progress(done, n)`, if given,
        is called after each batch with the examples decoded so far (e.g.
        `kdplug.run.console.progress_logger`: an untrained student decodes
        every row to the buffer's end, minutes on a CPU)."""
        ids = np.asarray(arrays[sk.ENCODER_TOKEN_IDS], "int32")
        mask = np.asarray(arrays[sk.ENCODER_PADDING_MASK], "int32")
        n = len(ids)
        out = np.zeros((n, self.model.decoder_length), "int32")
        if n == 0:
            return out
        size = min(batch_size, n)  # one shape: the last batch is padded
        done = 0
        for rows in batches_by_length(mask, size):
            padded = np.concatenate([rows, np.repeat(rows[:1], size - len(rows))])
            out[rows] = np.asarray(self._generate(ids[padded], mask[padded]))[:len(rows)]
            done += len(rows)
            if progress is not None:
                progress(done, n)
        return out

    def generate(self, arrays, batch_size=64, progress=None):
        """Generated word-piece ids per example: the buffer after [CLS], up
        to (not including) the first [SEP]. `progress`: as `generate_ids`."""
        return [self.strip(row)
                for row in self.generate_ids(arrays, batch_size, progress)]

    def strip(self, row):
        out = []
        for token in np.asarray(row)[1:].tolist():
            if token == self.end_id:
                break
            if token != self.pad_id:
                out.append(int(token))
        return out
