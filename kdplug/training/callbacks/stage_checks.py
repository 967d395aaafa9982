"""`StageChecks`: the warnings a stage owes its user, each logged once."""

import logging

import keras

from kdplug.data.batch_mix import describe_mix
from kdplug.evaluation.collapse import ADVICE
from kdplug.evaluation.collapse import collapse_check
from kdplug.evaluation.collapse import plateau_check
from kdplug.evaluation.measure import predict_outputs

log = logging.getLogger("kdplug")


class StageChecks(keras.callbacks.Callback):
    """Checks a stage's training as it runs, and says what is wrong once.

    - **Batch mix**, after the first epoch: the label mix of its training
      batches (`kdplug.data.batch_mix.BatchMix`, counted by `mix.tap(ds)`)
      against random batches of the split; one warning when the batches
      are far from random samples (data in a sorted order that the
      pipeline did not shuffle).
    - **Collapse**, after every epoch: the student's predictions on the
      validation split (`kdplug.evaluation.collapse.collapse_check`: one
      class for nearly every example, a regressor's flat output, a tagger
      that predicts no label), and each hard cross-entropy term's epoch
      mean against `ln C` (`plateau_check`); one warning naming the likely
      causes and what to try.

    `summary()` gives both for the stage's history (`metrics.json`,
    `summary.md`).

    Args:
        stage: the stage's name (for messages).
        mix: the `BatchMix` counting the training batches, or None.
        model: the model whose predictions are checked (the student), or
            None for no collapse check (a stage that does not train the
            prediction layer).
        dataset: the validation batches `(features, labels)`, or None.
        label_kind: the task's `label_kind` (`class`, `float`, `multi`,
            `tags`).
        plateau_terms: `{term name: number of classes}`: hard cross-entropy
            terms whose epoch mean is compared with `ln C`.
        predictions: optional `fn(epoch) -> (outputs, labels)` giving this
            epoch's validation predictions when another callback computed
            them already (`ValidationMetrics.predictions`).
        length_buckets: a `kdplug.data.length_buckets.LengthBuckets`: its
            own prediction pass reads the (padded) dataset in batches of
            similar length (`predict_outputs`); None: as they are.

    Examples:

    ```python
    mix = BatchMix.for_task(task)
    checks = StageChecks("distill", mix, student, val_ds, "class", {"hard_ce": 2})
    distiller.fit(mix.tap(train_ds), validation_data=val_ds, callbacks=[checks])
    checks.summary()["collapsed"]
    ```
    """

    def __init__(self, stage, mix=None, model=None, dataset=None, label_kind="class",
                 plateau_terms=None, predictions=None, length_buckets=None):
        super().__init__()
        self.length_buckets = length_buckets
        self.stage = stage
        self.mix = mix
        self.predicted = model
        self.dataset = dataset
        self.label_kind = label_kind
        self.plateau_terms = dict(plateau_terms or {})
        self.predictions = predictions
        self.epochs = []
        self._mix_checked = False
        self._warned = False

    def on_epoch_end(self, epoch, logs=None):
        if self.mix is not None and not self._mix_checked:
            self._mix_checked = True
            self._check_mix()
        self._check_collapse(epoch, logs or {})

    def _check_mix(self):
        summary = self.mix.summary()
        text = describe_mix(summary)
        if summary.get("far_from_random"):
            log.warning(
                "stage %s: the first epoch's batches are not random samples of the "
                "training split (%s): the data is in an order (e.g. sorted by "
                "label) that the input pipeline did not shuffle away; shuffle "
                "the whole split before batching (tf.data: .shuffle(len(data)) "
                "before .batch())", self.stage, text)
        else:
            log.info("stage %s: %s", self.stage, text)

    def _check_collapse(self, epoch, logs):
        plateau = sorted(name for name, classes in self.plateau_terms.items()
                         if plateau_check(logs.get(name), classes))
        record = {"epoch": epoch + 1, "plateau": plateau}
        if self.predicted is not None and self.dataset is not None:
            outputs, labels = (self.predictions(epoch) if self.predictions else
                               predict_outputs(self.predicted, self.dataset,
                                               length_buckets=self.length_buckets))
            record.update(collapse_check(self.label_kind, outputs, labels))
        self.epochs.append(record)
        if (record.get("collapsed") or plateau) and not self._warned:
            self._warned = True
            what = []
            if record.get("collapsed"):
                what.append(f"on the validation split it {record['text']}")
            if plateau:
                what.append(f"its hard loss ({', '.join(plateau)}) stayed at ln C, "
                            "the uniform guess, for the whole epoch")
            log.warning("stage %s, epoch %d: the student has not left the majority "
                        "class: %s; %s", self.stage, epoch + 1, " and ".join(what),
                        ADVICE)

    def summary(self):
        """`{"batch_mix": BatchMix.summary() or None, "collapse": [per-epoch
        records], "collapsed": the last epoch's verdict}`."""
        last = self.epochs[-1] if self.epochs else {}
        return {"batch_mix": None if self.mix is None else self.mix.summary(),
                "collapse": self.epochs,
                "collapsed": bool(last.get("collapsed"))}
