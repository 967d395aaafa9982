"""`build_training_state`: the train step is traced once, and nothing else
changes (same losses, the dataset's order untouched)."""

import keras
import numpy as np
import tensorflow as tf

from kdplug.training.build_state import build_training_state


class CountingModel(keras.Sequential):
    """Counts how often its train step is traced (Python in a `tf.function`
    runs only while tracing)."""

    traces = 0

    def train_step(self, data):
        self.traces += 1
        return super().train_step(data)


def fit(prebuild):
    keras.utils.set_random_seed(0)
    x = np.random.default_rng(0).normal(size=(40, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(40, seed=1).batch(8)
    model = CountingModel([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.Adam(1e-2),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"], jit_compile=False)
    if prebuild:
        build_training_state(model, dataset)
        assert model.optimizer.built
        assert all(v.numpy() == 0 for m in model.metrics for v in m.variables)
    history = model.fit(dataset, epochs=3, verbose=0).history
    return model.traces, history


def test_train_step_is_traced_once_and_training_is_unchanged():
    traces, history = fit(prebuild=False)
    assert traces == 2  # Keras creates the variables in a first trace
    prebuilt_traces, prebuilt = fit(prebuild=True)
    assert prebuilt_traces == 1
    # the same steps on the same batches: the dataset was not read
    np.testing.assert_allclose(prebuilt["loss"], history["loss"], rtol=1e-6)
    np.testing.assert_allclose(prebuilt["accuracy"], history["accuracy"], rtol=1e-6)
    assert history["loss"][-1] < history["loss"][0]


def test_nothing_to_do_under_a_strategy(cpu_devices):
    """Keras builds the state itself under a `tf.distribute` strategy."""
    strategy = tf.distribute.MirroredStrategy(cpu_devices)
    with strategy.scope():
        model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
        model.compile(optimizer="adam", loss="mse")
        build_training_state(model, tf.data.Dataset.from_tensors(
            (tf.zeros((1, 4)), tf.zeros((1, 2)))))
    assert not model.optimizer.built
