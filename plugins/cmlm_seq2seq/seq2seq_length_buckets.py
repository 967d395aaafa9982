import tensorflow as tf

from kdplug import keys
from kdplug.data import LengthBuckets
from kdplug.data import real_lengths
from kdplug.data import trim_to_longest
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk

# Each padding mask with what it cuts (`trim_to_longest`'s groups); the
# decoder's also cuts the teacher's soft labels, one row per target
# position, and `trim` cuts the labels with it.
GROUPS = {
    sk.ENCODER_PADDING_MASK: (sk.ENCODER_TOKEN_IDS,),
    sk.DECODER_PADDING_MASK: (sk.DECODER_TOKEN_IDS,
                              *(keys.teacher_key(t) for t in sk.TOPK_TAPS)),
}


class Seq2SeqLengthBuckets(LengthBuckets):
    """`LengthBuckets` for sequence-to-sequence student batches.

    A window of `(features, labels)` pairs is sorted by source plus target
    length (the real positions of `encoder_padding_mask` and
    `decoder_padding_mask`), and each batch is cut twice: the source inputs
    to the batch's longest source, and the decoder inputs, the labels and
    the teacher's top-K soft labels (`teacher/topk_ids`,
    `teacher/topk_probs`) to its longest target, each rounded up to
    `multiple`. Positions cut are padding in every row (label -1, no soft
    labels), which every seq2seq term and the student mask out, so a batch
    gives the same per-example losses cut or not.

    The reference's student (OpenNMT) batches sentences of similar length
    the same way. Most of a step is the output projection of every decoder
    position over the word-piece vocabulary, so what this saves is about
    the share of target padding (docs/performance.md).

    Args:
        window: int >= 1. Batches per sorting window.
        multiple: int >= 1. Cut lengths are rounded up to a multiple of
            this (an XLA-compiled step compiles one shape per pair of
            lengths).

    Examples:

    ```python
    buckets = Seq2SeqLengthBuckets(window=16, multiple=8)
    train_ds = buckets.batch(pairs_ds.shuffle(n, seed=0), 64, num_examples=n,
                             shuffle=True, seed=0)
    ```
    """

    def lengths(self, features):
        return real_lengths(features, GROUPS)

    def trim(self, features, labels, *rest):
        out = trim_to_longest(features, self.multiple, GROUPS)
        labels = labels[:, :tf.shape(out[sk.DECODER_PADDING_MASK])[1]]
        return (out, labels, *rest)

    def __repr__(self):
        return f"Seq2SeqLengthBuckets(window={self.window}, multiple={self.multiple})"
