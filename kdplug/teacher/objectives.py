"""What a teacher is fine-tuned for: the loss, the metrics, the report.

`TeacherFinetuner` trains a teacher with an objective; the objective decides
the loss, what the validation split is measured with, and contributes to the
cache key, so that teachers fine-tuned for different objectives on the same
file never share an entry. Its `info(history, teacher, val_ds)` reports the
dev split, read in length buckets when `TeacherFinetuner.run` passes
`length_buckets=` (only then: an objective of its own may leave it out).

Examples:

```python
TeacherFinetuner(config, source, objective=RegressionObjective()).run(
    teacher, train_ds, val_ds)
```
"""

import keras

from kdplug.evaluation.measure import accuracy
from kdplug.evaluation.measure import predict_outputs
from kdplug.evaluation.task_metrics import multi_label_metrics
from kdplug.evaluation.task_metrics import regression_metrics
from kdplug.evaluation.task_metrics import task_metrics
from kdplug.storage import fingerprint


class ClassificationObjective:
    """Cross-entropy on integer class ids; validation accuracy.

    The cache key is the fine-tuning key itself (kdplug 0.1's key, so
    teachers cached by it are reused).
    """

    name = "classification"

    def key(self, base_key):
        return base_key

    def loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def metrics(self):
        return ["accuracy"]

    def scores(self):
        """`(names, fn)`: validation metrics beyond the compiled ones, for
        early stopping (`ValidationMetrics`); none here."""
        return [], None

    def info(self, history, teacher, val_ds, length_buckets=None):
        return {
            "train_accuracy": float(history["accuracy"][-1]),
            # the dev split, small: traced like the other objectives', no XLA
            "validation_accuracy": (accuracy(teacher, val_ds, jit_compile=False,
                                             length_buckets=length_buckets)
                                    if val_ds else None),
        }


class RegressionObjective:
    """Squared error on a float target (a one-output head); validation
    Pearson, Spearman and MSE."""

    name = "regression"

    def key(self, base_key):
        return fingerprint({"teacher": base_key, "objective": "regression_mse"})

    def loss(self):
        return keras.losses.MeanSquaredError()

    def metrics(self):
        return []

    def scores(self):
        return ["pearson", "spearman", "mse"], regression_metrics

    def info(self, history, teacher, val_ds, length_buckets=None):
        info = {"train_mse": float(history["loss"][-1]), "validation": None}
        if val_ds is not None:
            outputs, labels = predict_outputs(teacher, val_ds,
                                              length_buckets=length_buckets)
            info["validation"] = task_metrics("regression", outputs, labels)
        return info


class MultiLabelObjective:
    """Binary cross-entropy on multi-hot labels (one sigmoid per label);
    validation micro / macro F1 and exact match."""

    name = "multi_label"

    def key(self, base_key):
        return fingerprint({"teacher": base_key, "objective": "multi_label_bce"})

    def loss(self):
        return keras.losses.BinaryCrossentropy(from_logits=True)

    def metrics(self):
        return []

    def scores(self):
        return ["f1_micro", "f1_macro", "exact_match"], multi_label_metrics

    def info(self, history, teacher, val_ds, length_buckets=None):
        info = {"train_bce": float(history["loss"][-1]), "validation": None}
        if val_ds is not None:
            outputs, labels = predict_outputs(teacher, val_ds,
                                              length_buckets=length_buckets)
            info["validation"] = multi_label_metrics(
                ["f1_micro", "f1_macro", "exact_match"], outputs, labels)
        return info


class TokenClassificationObjective:
    """Cross-entropy on every labelled word piece (labels `-1` ignored);
    validation entity F1 and per-word accuracy.

    Args:
        label_names: the tags in id order (BIO tags for entity F1).
    """

    name = "token_classification"

    def __init__(self, label_names=None):
        self.label_names = label_names

    def key(self, base_key):
        return fingerprint({"teacher": base_key, "objective": "token_ce"})

    def loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                          ignore_class=-1)

    def metrics(self):
        return []

    def scores(self):
        return ["entity_f1", "token_accuracy"], self._metrics

    def _metrics(self, names, outputs, labels):
        from kdplug.evaluation.token_metrics import token_metrics

        return token_metrics(names, outputs, labels, self.label_names)

    def info(self, history, teacher, val_ds, length_buckets=None):
        info = {"train_ce": float(history["loss"][-1]), "validation": None}
        if val_ds is not None:
            outputs, labels = predict_outputs(teacher, val_ds,
                                              length_buckets=length_buckets)
            info["validation"] = self._metrics(["entity_f1", "token_accuracy"],
                                               outputs, labels)
        return info


class ExtractiveQAObjective:
    """The mean of the answer start and end cross-entropies per window
    (BERT's SQuAD loss, `kdplug.terms.span_positions.span_cross_entropy`);
    validation F1 and exact match.

    Args:
        task: the run's `ExtractiveQATask` (it knows the windows' questions).
    """

    name = "extractive_qa"
    validation_metrics = ("f1", "exact_match")

    def __init__(self, task):
        self.task = task

    def key(self, base_key):
        return fingerprint({"teacher": base_key, "objective": "span_ce"})

    def loss(self):
        from kdplug.terms.span_cross_entropy_loss import SpanCrossEntropyLoss

        return SpanCrossEntropyLoss()

    def metrics(self):
        return []

    def scores(self):
        return list(self.validation_metrics), self.task.metrics

    def info(self, history, teacher, val_ds, length_buckets=None):
        info = {"train_ce": float(history["loss"][-1]), "validation": None}
        if val_ds is not None:
            outputs, labels = predict_outputs(teacher, val_ds,
                                              length_buckets=length_buckets)
            info["validation"] = self.task.metrics(list(self.validation_metrics),
                                                   outputs, labels)
        return info


OBJECTIVES = {cls.name: cls for cls in (
    ClassificationObjective, RegressionObjective, MultiLabelObjective,
    TokenClassificationObjective, ExtractiveQAObjective)}
