"""What the extractive QA terms share: a window's labels and its start and
end logits with the padding left out."""

from keras import ops

from kdplug import keys

# Columns of an extractive QA window's label (`kdplug.tasks.ExtractiveQATask`).
START, END, WINDOW, LENGTH = range(4)
# The logit given to a padding position: its softmax probability is 0.
PADDING_LOGIT = -1e9


def span_logits(logits, labels):
    """`(start, end)` logits of a batch of windows, each `(batch, seq)`
    float32, with every position at or past the window's length (its
    padding; label column `LENGTH`) set to `PADDING_LOGIT`, so a window's
    start and end distributions are the same whether its batch is padded to
    `data.sequence_length` or cut to its longest window.

    Args:
        logits: `(batch, seq, 2)` per-token logits, start then end
            (`BertClassifier(per_token=True)` with 2 outputs).
        labels: `(batch, 4)` window labels: start, end, window id, length.

    Examples:

    ```python
    start, end = span_logits(logits, batch["labels"])
    ```
    """
    logits = ops.cast(logits, "float32")
    lengths = ops.cast(labels, "int32")[:, LENGTH]
    positions = ops.arange(ops.shape(logits)[1], dtype="int32")
    real = ops.expand_dims(positions, 0) < ops.expand_dims(lengths, 1)
    masked = ops.where(ops.expand_dims(real, -1), logits, PADDING_LOGIT)
    return masked[..., 0], masked[..., 1]


def span_cross_entropy(labels, logits):
    """Per window, the mean of the start and end cross-entropies against the
    gold start and end tokens (`-log softmax(start)[s] - log
    softmax(end)[e]) / 2`, BERT's SQuAD loss), padding left out.

    Examples:

    ```python
    span_cross_entropy(batch["labels"], student["logits"])  # (batch,)
    ```
    """
    labels = ops.cast(labels, "int32")
    losses = [
        -ops.take_along_axis(ops.log_softmax(side, axis=-1),
                             ops.expand_dims(labels[:, column], -1), axis=-1)[:, 0]
        for side, column in zip(span_logits(logits, labels), (START, END))]
    return (losses[0] + losses[1]) / 2.0


def labels_of(batch):
    """The batch's window labels."""
    return batch[keys.LABELS]
