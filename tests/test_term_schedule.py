import keras
import numpy as np
import pytest

from kdplug import Distiller
from kdplug import testing
from kdplug.errors import KdplugError
from kdplug.term_schedule import TermSchedule
from kdplug.terms import HardLabelCrossEntropy
from kdplug.terms import SoftTargetCrossEntropy


def test_values_by_hand():
    linear = TermSchedule("t", "linear", start=0.0, end=1.0, steps=4)
    assert [linear.value(s) for s in range(6)] == [0.0, 0.25, 0.5, 0.75, 1.0, 1.0]
    cosine = TermSchedule("t", "cosine", start=8.0, end=2.0, steps=4, start_step=2)
    got = [cosine.value(s) for s in range(8)]
    # before start_step: 8; then 2 + 6 * (1 + cos(pi * p)) / 2 for p = 0, .25, ...
    expected = [8.0, 8.0, 8.0, 2 + 3 * (1 + np.sqrt(0.5)), 5.0,
                2 + 3 * (1 - np.sqrt(0.5)), 2.0, 2.0]
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    constant = TermSchedule("t", "constant", start=0.3, end=9.0, steps=2)
    assert [constant.value(s) for s in range(3)] == [0.3, 0.3, 0.3]
    with pytest.raises(KdplugError, match="kind"):
        TermSchedule("t", "exponential")


class Recorder(keras.callbacks.Callback):
    """Records the variables' values as the train step sees them."""

    def __init__(self, variables):
        super().__init__()
        self.variables = variables
        self.seen = {name: [] for name in variables}

    def on_train_batch_begin(self, batch, logs=None):
        for name, variable in self.variables.items():
            self.seen[name].append(float(variable.numpy()))


def test_sets_weight_and_temperature_every_batch_during_fit():
    teacher = testing.tiny_bert_classifier(num_layers=1, seed=1)
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    soft = SoftTargetCrossEntropy(temperature=4.0, weight=0.5)
    hard = HardLabelCrossEntropy(weight=0.5)
    distiller = Distiller(student, teacher, [soft, hard])
    distiller.compile(optimizer=keras.optimizers.Adam(1e-3), jit_compile=False)
    ds = testing.toy_dataset(num_examples=32, batch_size=8)  # 4 steps per epoch
    schedules = [
        TermSchedule("soft_ce", "linear", start=0.0, end=1.0),  # whole fit: 8 steps
        TermSchedule(soft, "cosine", start=4.0, end=1.0, steps=4, variable="temperature"),
        TermSchedule("hard_ce", "constant", start=0.25),
    ]
    recorder = Recorder({"soft": soft.weight, "T": soft.temperature, "hard": hard.weight})
    history = distiller.fit(ds, epochs=2, callbacks=[*schedules, recorder],
                            verbose=0, shuffle=False)
    np.testing.assert_allclose(recorder.seen["soft"], np.arange(8) / 8, atol=1e-7)
    temps = 1 + 3 * (1 + np.cos(np.pi * np.minimum(np.arange(8) / 4, 1))) / 2
    np.testing.assert_allclose(recorder.seen["T"], temps, rtol=1e-6)
    np.testing.assert_allclose(recorder.seen["hard"], [0.25] * 8)
    assert np.isfinite(history.history["loss"]).all()
    assert schedules[0].get_config()["term"] == "soft_ce"
    assert schedules[1].get_config()["term"] == "soft_ce"


def test_errors_name_the_term():
    teacher = testing.tiny_bert_classifier(num_layers=1, seed=1)
    student = testing.tiny_bert_classifier(num_layers=1, seed=2)
    distiller = Distiller(student, teacher, [HardLabelCrossEntropy()])
    distiller.compile(optimizer="adam", jit_compile=False)
    ds = testing.toy_dataset(num_examples=8, batch_size=8)
    with pytest.raises(KdplugError, match="no loss term named 'soft'.*hard_ce"):
        distiller.fit(ds, callbacks=[TermSchedule("soft")], verbose=0,
                      shuffle=False)
    # required=False: a term missing from this stage is skipped silently
    optional = TermSchedule("soft", required=False)
    optional.set_model(distiller)
    optional.on_train_begin()
    optional.on_train_batch_begin(0)
    with pytest.raises(KdplugError, match="no scalar variable 'temperature'"):
        distiller.fit(ds, callbacks=[TermSchedule("hard_ce", variable="temperature")],
                      verbose=0, shuffle=False)
