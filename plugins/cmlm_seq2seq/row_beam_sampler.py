import keras_hub
from keras import ops
from keras import tree


class RowBeamSampler(keras_hub.samplers.Sampler):
    """Beam search that reorders its beams by taking rows: one gather along
    the first axis of every state tensor per step.

    The search is keras-hub's `BeamSampler`'s (the same candidates, scores
    and tie order, so the same tokens: tests/plugins/cmlm_seq2seq/
    test_row_beam_sampler.py): each source keeps `num_beams` rows, beam
    `k` of source `b` at row `b * num_beams + k`; at every step each row's
    summed log-probabilities extend over the vocabulary, the `num_beams`
    best of a source's `num_beams * vocabulary` candidates survive, and the
    prompt and cache rows they extend are taken with
    `ops.take(x, rows, axis=0)`. keras-hub's sampler reorders with
    `take_along_axis` on a `(batch, beams, ...)` view, which broadcasts the
    indices to the full shape of every cache tensor; with a decoder's
    key/value cache that reorder, not the decoder, dominated a beam step
    (docs/performance.md, "Seq2seq decoding").

    As in keras-hub's sampler: a position where `mask` is true keeps the
    prompt's token, the loop ends once every row holds a stop token at an
    unmasked position (or the prompt is full), the search ranks beams by
    their summed log probabilities, and the best beam of each source is
    returned. With `length_penalty` (alpha > 0) "best" is GNMT's (Wu et al.
    2016), as OpenNMT's `GNMTGlobalScorer` ranks finished hypotheses: the
    summed log probability divided by `((5 + |Y|) / 6) ** alpha`, `|Y|` the
    prompt's tokens up to its first unmasked stop token, both ends
    included (the whole prompt if there is none); 0 keeps the plain sum
    (keras-hub's choice).

    Args:
        num_beams: int >= 1. Beams per source.
        length_penalty: float >= 0. GNMT's alpha for the final choice
            (0.6 in Chen et al. 2020's decoding; 0: none).
        **kwargs: keras-hub `Sampler` arguments (`temperature`).

    Call arguments: those of keras-hub samplers: `next(prompt, cache,
    index) -> (logits, hidden_states, cache)`, `prompt` `(batch, length)`,
    `cache` (a structure of tensors with the batch first, or None), `index`
    (the first position to fill), `mask`, `stop_token_ids`.

    Examples:

    ```python
    sampler = RowBeamSampler(num_beams=5)
    tokens = sampler(next, prompt, cache=cache, index=1, mask=prompt_mask,
                     stop_token_ids=[sep_id])
    ```
    """

    def __init__(self, num_beams=5, length_penalty=0.0, **kwargs):
        super().__init__(**kwargs)
        if int(num_beams) != num_beams or num_beams < 1:
            raise ValueError(f"num_beams must be an integer >= 1, got {num_beams!r}")
        if length_penalty < 0:
            raise ValueError(f"length_penalty must be >= 0, got {length_penalty!r}")
        self.num_beams = int(num_beams)
        self.length_penalty = float(length_penalty)

    def __call__(self, next, prompt, cache=None, index=0, mask=None,
                 stop_token_ids=None, hidden_states=None, model=None):
        beams = self.num_beams
        batch, length = ops.shape(prompt)[0], ops.shape(prompt)[1]
        mask = (ops.zeros_like(prompt, dtype="bool") if mask is None
                else ops.cast(mask, "bool"))
        has_cache = cache is not None

        def per_beam(x):  # row b -> rows b * beams .. b * beams + beams - 1
            return ops.repeat(x, beams, axis=0)

        prompt, mask = per_beam(prompt), per_beam(mask)
        cache = tree.map_structure(per_beam, cache) if has_cache else ()
        # Only the first beam of a source is live before the first step.
        first = ops.where(ops.arange(beams) == 0, 0.0, -1e9)
        scores = ops.reshape(ops.tile(first[None, :], (batch, 1)), (-1,))

        def stops(prompt):  # (rows, length): an unmasked stop token there
            found = ops.zeros_like(mask)
            for token in stop_token_ids or ():
                found = ops.logical_or(found, prompt == token)
            return ops.logical_and(found, ops.logical_not(mask))

        def cond(prompt, cache, index, scores):
            if stop_token_ids is None:
                return ops.convert_to_tensor(True)
            return ops.logical_not(ops.all(ops.any(stops(prompt), axis=1)))

        def body(prompt, cache, index, scores):
            logits, _, state = next(prompt, cache if has_cache else None, index)
            cache = state if has_cache else ()
            log_probs = ops.log(self.compute_probabilities(logits))
            vocabulary = ops.shape(log_probs)[-1]
            candidates = ops.reshape(log_probs + scores[:, None],
                                     (-1, beams * vocabulary))
            best, chosen = ops.top_k(candidates, k=beams, sorted=False)
            sources = ops.arange(ops.shape(candidates)[0])[:, None]
            rows = ops.reshape(sources * beams + chosen // vocabulary, (-1,))
            prompt = ops.take(prompt, rows, axis=0)
            if has_cache:
                cache = tree.map_structure(lambda x: ops.take(x, rows, axis=0), cache)
            token = ops.cast(ops.reshape(chosen % vocabulary, (-1,)), prompt.dtype)
            token = ops.where(mask[:, index], prompt[:, index], token)
            prompt = ops.slice_update(prompt, [0, index], token[:, None])
            return prompt, cache, index + 1, ops.reshape(best, (-1,))

        index = ops.cast(index, "int32")
        prompt, _, _, scores = self.run_loop(
            cond=cond, body=body, loop_vars=(prompt, cache, index, scores),
            maximum_iterations=length - index, model=model)
        if self.length_penalty:
            found = stops(prompt)
            lengths = ops.where(ops.any(found, axis=1),
                                ops.argmax(ops.cast(found, "int32"), axis=1) + 1, length)
            scores = scores / ((5.0 + ops.cast(lengths, "float32")) / 6.0) ** self.length_penalty
        top = ops.argmax(ops.reshape(scores, (-1, beams)), axis=-1)
        return ops.take(prompt, ops.arange(batch) * beams + ops.cast(top, "int32"), axis=0)

    def get_config(self):
        return {**super().get_config(), "num_beams": self.num_beams,
                "length_penalty": self.length_penalty}
