import math

import numpy as np
import tensorflow as tf

from kdplug import keys
from kdplug.data import batches_by_length
from kdplug.data import trim_to_longest
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk


class TopKExtractor:
    """The C-MLM teacher's word distribution at every target position, with
    that position masked, kept as its top K word pieces.

    For an example whose target (with its final [SEP]) has `n` positions,
    pass `p` (`0 <= p < passes`) masks every target position `j` with `j mod
    passes == p` at once and reads the masked-LM head's softmax there; `passes`
    forward passes cover all `n` positions (Chen et al.'s reference,
    `dump_teacher_hiddens.py`, with 7 passes; with `n <= passes` each pass
    masks one position, and passes past `n` are skipped). With `passes >=
    max_target_length + 1` every distribution is the teacher's with exactly
    that one position masked. The examples run in batches of similar
    length (sorted by length; the outputs keep the input's order), each cut
    to its longest example rounded up to a multiple of 8
    (`kdplug.data.trimming.trim_to_longest`): padding changes none of the
    distributions. On the bench's pairs (`data/punct_restore.tsv`, train:
    49 of 128 positions on average) a batch of 64 in the data's order is
    105 positions long on average, sorted 53.

    Args:
        mlm: the C-MLM teacher, a keras-hub `*MaskedLM` (inputs `token_ids`,
            `segment_ids`, `padding_mask`, `mask_positions`; logits out).
        mask_token_id: int.
        positions: int. Target positions per example (`max_target_length +
            1`): the width of the output.
        passes: int. Forward passes per example.
        top_k: int. K.
        batch_size: int. Examples per forward pass.

    Examples:

    ```python
    extractor = TopKExtractor(mlm, tokenizer.mask_token_id, positions=65,
                              passes=7, top_k=8)
    ids, probs = extractor.extract(encoder.teacher_arrays(sources, targets))
    ids.shape, probs.dtype  # (n, 65, 8), float16
    ```
    """

    def __init__(self, mlm, mask_token_id, positions, passes=7, top_k=8,
                 batch_size=64):
        if passes < 1 or top_k < 1:
            raise ValueError(f"passes and top_k must be >= 1, got {passes}, {top_k}")
        self.mlm = mlm
        self.mask_token_id = int(mask_token_id)
        self.positions = int(positions)
        self.passes = int(passes)
        self.top_k = int(top_k)
        self.batch_size = int(batch_size)
        self.slots = math.ceil(self.positions / self.passes)  # masked per pass
        self._step = tf.function(self._top_k, reduce_retracing=True, autograph=False)

    def _top_k(self, inputs):
        logits = tf.cast(self.mlm(inputs, training=False), tf.float32)
        return tf.math.top_k(tf.nn.softmax(logits, axis=-1), k=self.top_k)

    def pass_positions(self, p):
        """Target positions `j` (0-based) pass `p` masks, padded to `slots`
        with -1."""
        js = np.arange(p, self.positions, self.passes)
        return np.concatenate([js, np.full(self.slots - len(js), -1)])

    def extract(self, arrays, progress=None):
        """`(ids, probs)` for `Seq2SeqEncoder.teacher_arrays(...)`:
        `(n, positions, K)` int32 and float16, zero past each target.
        `progress(done, n)`, if given, is called after each batch with the
        examples done so far."""
        token_ids = np.asarray(arrays[keys.TOKEN_IDS])
        segment_ids = np.asarray(arrays[keys.SEGMENT_IDS])
        padding_mask = np.asarray(arrays[keys.PADDING_MASK])
        target = np.asarray(arrays[sk.TARGET_MASK]).astype(bool)
        n = len(token_ids)
        ids = np.zeros((n, self.positions, self.top_k), "int32")
        probs = np.zeros((n, self.positions, self.top_k), "float16")
        starts = target.argmax(axis=1)
        counts = np.minimum(target.sum(axis=1), self.positions)
        done = 0
        for rows in batches_by_length(padding_mask, self.batch_size):
            batch = {keys.TOKEN_IDS: token_ids[rows], keys.SEGMENT_IDS: segment_ids[rows],
                     keys.PADDING_MASK: padding_mask[rows]}
            for p in range(min(self.passes, int(counts[rows].max()))):
                js = self.pass_positions(p)
                valid = (js[None, :] >= 0) & (js[None, :] < counts[rows, None])
                if not valid.any():
                    continue
                where = np.where(valid, starts[rows, None] + js[None, :], 0)
                masked = batch[keys.TOKEN_IDS].copy()
                r, c = np.nonzero(valid)
                masked[r, where[r, c]] = self.mask_token_id
                values, indices = self._step(trim_to_longest({
                    **batch, keys.TOKEN_IDS: masked,
                    sk.MASK_POSITIONS: where.astype("int32")}))
                ids[rows[r], js[c]] = indices.numpy()[r, c]
                probs[rows[r], js[c]] = values.numpy()[r, c].astype("float16")
            done += len(rows)
            if progress is not None:
                progress(done, n)
        return ids, probs


def soft_label_scores(ids, labels):
    """How well the soft labels of a split predict its gold targets: the
    C-MLM teacher's masked-token accuracy under the extraction's own masks
    (every `passes`-th target position masked per pass, `TopKExtractor`),
    read off the soft labels without another forward pass, since their
    first word piece is the teacher's argmax; and the share of positions
    whose gold word piece is among the K kept.

    Args:
        ids: `(n, positions, K)` word pieces of the soft labels, best first
            (`TopKExtractor.extract`, or the cache).
        labels: `(n, positions)` gold word pieces, -1 where there is none
            (`Seq2SeqEncoder.student_arrays`: label `j` is the teacher's
            target position `j`).

    Returns:
        `{"accuracy": top-1 == gold, "top_k_recall": gold among the K}`,
        over the positions with a label.

    Examples:

    >>> import numpy as np
    >>> ids = np.array([[[5, 7], [2, 9], [0, 0]]])
    >>> soft_label_scores(ids, np.array([[5, 9, -1]]))
    {'accuracy': 0.5, 'top_k_recall': 1.0}
    """
    ids, labels = np.asarray(ids), np.asarray(labels)
    valid = labels >= 0
    counted = max(int(valid.sum()), 1)
    top1 = (ids[..., 0] == labels) & valid
    among = (ids == labels[..., None]).any(axis=-1) & valid
    return {"accuracy": float(top1.sum()) / counted,
            "top_k_recall": float(among.sum()) / counted}
