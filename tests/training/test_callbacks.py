import keras
import pytest
from keras import ops

from kdplug import Distiller
from kdplug import testing
from kdplug.errors import TrainingError
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import Term
from kdplug.training.callbacks import ResumableBackup
from kdplug.training.callbacks import StopOnNaN


class NaNAfter(Term):
    """Finite for the first `steps` batches, then NaN."""

    student_taps = ("logits",)

    def __init__(self, steps, **kwargs):
        super().__init__(name="nan_after", **kwargs)
        self.steps = steps
        self.seen = self.add_weight(shape=(), initializer="zeros", trainable=False,
                                    name="seen")

    def call(self, teacher, student, batch):
        self.seen.assign_add(1.0)
        logits = student["logits"]
        bad = ops.greater(self.seen, float(self.steps))
        return ops.where(bad, ops.log(-ops.ones_like(logits[:, 0])), 0.0 * logits[:, 0])


def test_nan_loss_stops_with_a_clear_error(tmp_path):
    student = testing.tiny_bert_classifier(num_layers=1)
    distiller = Distiller(student, None, [HardLabelCrossEntropy(), NaNAfter(steps=5)])
    distiller.compile(optimizer=keras.optimizers.Adam(1e-3), run_eagerly=True)
    backup = str(tmp_path / "backup")
    with pytest.raises(TrainingError) as info:
        distiller.fit(
            testing.toy_dataset(64, 16), epochs=3, verbose=0,
            callbacks=[ResumableBackup(backup, "distill"), StopOnNaN("distill", backup)],
        )
    message = str(info.value)
    assert "stage 'distill': loss became nan at epoch 2, batch 2" in message
    assert backup in message
    # the end of epoch 1 (the last good state) is kept for a re-run
    assert ResumableBackup(backup).backed_up_epochs() == 1
