import keras
import numpy as np
import pytest
from sklearn.metrics import f1_score
from sklearn.metrics import matthews_corrcoef

from kdplug import testing
from kdplug.training.callbacks import ValidationMetrics


class Seen(keras.callbacks.Callback):
    """Records the epoch logs a later callback sees."""

    def __init__(self):
        super().__init__()
        self.logs = []

    def on_epoch_end(self, epoch, logs=None):
        self.logs.append(dict(logs))


@pytest.mark.slow  # two epochs of fit with validation: ~7 s on 2 busy cores
def test_adds_val_metrics_to_the_logs_later_callbacks_read():
    model = testing.tiny_bert_classifier(num_classes=2, seed=0)
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    train = testing.toy_dataset(32, batch_size=16, seed=0)
    val = testing.toy_dataset(24, batch_size=8, seed=1)
    scores = ValidationMetrics(model, val, ["accuracy", "f1_macro", "mcc"])
    seen = Seen()
    history = model.fit(train, validation_data=val, epochs=2, verbose=0,
                        callbacks=[scores, seen])
    assert len(seen.logs) == 2
    for logs in seen.logs:
        assert {"val_f1_macro", "val_mcc", "val_accuracy"} <= set(logs)
    assert len(history.history["val_f1_macro"]) == 2
    # the last epoch's values are those of the final weights, by hand
    x, y = testing.toy_arrays(24, seed=1)
    pred = np.argmax(np.asarray(model(x, training=False)), -1)
    assert seen.logs[-1]["val_f1_macro"] == pytest.approx(
        f1_score(y, pred, average="macro", zero_division=0))
    assert seen.logs[-1]["val_mcc"] == pytest.approx(matthews_corrcoef(y, pred))
    # val_accuracy is Keras' compiled metric, left as it is
    assert seen.logs[-1]["val_accuracy"] == pytest.approx(history.history[
        "val_accuracy"][-1])
    assert scores.values()["accuracy"] == pytest.approx(np.mean(pred == y))


def test_length_buckets_give_the_padded_values_and_predictions():
    from kdplug.data.length_buckets import LengthBuckets

    model = testing.tiny_bert_classifier(num_classes=2, seed=0, num_layers=1)
    val = testing.toy_dataset(37, batch_size=8, seed=2)
    names = ["accuracy", "f1_macro", "mcc"]
    padded = ValidationMetrics(model, val, names)
    cut = ValidationMetrics(model, val, names, length_buckets=LengthBuckets(multiple=4))
    assert cut.values() == padded.values()
    outputs, labels = cut.predictions(0)  # in the split's order
    expected, same = padded.predictions(0)
    np.testing.assert_allclose(outputs, expected, rtol=0, atol=1e-5)
    np.testing.assert_array_equal(labels, same)
