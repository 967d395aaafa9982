"""`ValidationMetrics`: task metrics of the validation split in each
epoch's logs."""

import keras

from kdplug.evaluation.measure import predict_outputs
from kdplug.evaluation.task_metrics import classification_metrics


class ValidationMetrics(keras.callbacks.Callback):
    """At each epoch's end, predicts `dataset` with `model` and adds
    `val_<metric>` for each of `metrics` to the epoch logs.

    Keras' compiled metrics see only running batch statistics; F1 and
    Matthews correlation need the whole split's predictions, so they are
    computed here, once per epoch, from one prediction pass. Put it before
    the callbacks that read the logs (`RunHistory`, `KeepBestEpoch`,
    TensorBoard), so they see the values. A value the logs already hold
    (`val_accuracy`, a compiled Keras metric) is left as it is.

    Args:
        model: the classifier predicted (for a `Distiller`: the student),
            returning logits `(batch, C)`.
        dataset: batched `(features, labels)` validation data; labels `< 0`
            are skipped.
        metrics: metric names `compute` knows
            (`kdplug.config.EvaluationConfig.METRICS`).
        prefix: the logs' key prefix.
        compute: `fn(names, outputs, labels) -> {name: value}`, the task's
            metrics (`Task.metrics`; default classification's).
        length_buckets: a `kdplug.data.length_buckets.LengthBuckets` (the
            run's `training.length_buckets`): the prediction pass reads the
            (padded) dataset in batches of similar length, outputs back in
            its order (`predict_outputs`); None: the batches as they are.

    Examples:

    ```python
    scores = ValidationMetrics(student, val_ds, ["f1_macro", "mcc"])
    distiller.fit(train_ds, validation_data=val_ds, callbacks=[scores, history])
    # history: val_f1_macro, val_mcc per epoch
    ```
    """

    def __init__(self, model, dataset, metrics, prefix="val_",
                 compute=classification_metrics, length_buckets=None):
        super().__init__()
        self.compute = compute
        self.length_buckets = length_buckets
        self.predicted = model
        self.dataset = dataset
        self.metrics = list(metrics)
        self.prefix = prefix
        self._last = None  # (epoch, outputs, labels)

    def values(self):
        """`{metric: value}` of the model's current weights on the dataset."""
        return self.compute(self.metrics, *self._predict())

    def predictions(self, epoch):
        """`(outputs, labels)` of the model on the dataset at the end of
        `epoch`, predicted once per epoch (other callbacks share them)."""
        if self._last is None or self._last[0] != epoch:
            self._last = (epoch, *self._predict())
        return self._last[1:]

    def _predict(self):
        return predict_outputs(self.predicted, self.dataset,
                               length_buckets=self.length_buckets)

    def on_epoch_end(self, epoch, logs=None):
        if logs is None:
            return
        names = [m for m in self.metrics if f"{self.prefix}{m}" not in logs]
        if not names:
            return
        values = self.compute(names, *self.predictions(epoch))
        for name, value in values.items():
            logs[f"{self.prefix}{name}"] = value
