"""What a distillation step logs: the loss, each term, and label metrics."""

from keras import ops


def update_step_metrics(loss_metric, term_metrics, label_metrics, y, sample_weight,
                        per_term, weighted, logits):
    """Updates the running means a step logs.

    `loss_metric` takes the weighted per-example total, each of
    `term_metrics` its term's unweighted per-example loss (all per-example
    means, so the logged values do not depend on the number of replicas);
    each of `label_metrics` (e.g. accuracy, or Keras' compiled metrics
    container) compares the student's `logits` with the gold labels `y`,
    examples without one (label `< 0`) masked out.

    Args:
        loss_metric: a `keras.metrics.Mean`.
        term_metrics: one `keras.metrics.Mean` per term.
        label_metrics: metrics called as `update_state(labels, logits, mask)`.
        y: the labels, or None.
        sample_weight: per-example weights, or None.
        per_term: per-example losses, one tensor per term.
        weighted: the weighted per-example total.
        logits: the student's logits.
    """
    loss_metric.update_state(weighted)
    for metric, loss in zip(term_metrics, per_term):
        metric.update_state(loss, sample_weight=sample_weight)
    if y is None:
        return
    mask = ops.cast(ops.greater_equal(y, 0), "float32")
    if sample_weight is not None:
        mask = mask * ops.cast(sample_weight, "float32")
    for metric in label_metrics:
        metric.update_state(ops.maximum(y, 0), logits, mask)
