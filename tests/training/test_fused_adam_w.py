"""`FusedAdamW` against Keras' own AdamW / Adam: the same numbers step by
step (traced, eager, XLA, sparse gradients, under `MirroredStrategy`), a
fraction of the graph ops, and a `.keras` round trip."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug.training.distribution import mirrored_strategy
from kdplug.training.fused_adam_w import FusedAdamW
from kdplug.training.optimizers import WarmupLinearDecay
from kdplug.training.optimizers import make_optimizer

STEPS = 5
# float32 rounding: Keras computes the same formulas op by op
RTOL, ATOL = 2e-6, 1e-7


def settings(**overrides):
    """A schedule, global clipping and a decay large enough to show."""
    return {"learning_rate": WarmupLinearDecay(1e-2, total_steps=20, warmup_steps=2),
            "weight_decay": 0.1, "epsilon": 1e-6, "global_clipnorm": 1.0, **overrides}


def make(cls, **overrides):
    optimizer = cls(**settings(**overrides))
    optimizer.exclude_from_weight_decay(var_names=["bias"])
    return optimizer


def variables(seed=0, dtype="float32"):
    rng = np.random.default_rng(seed)
    return [keras.Variable(rng.normal(size=shape).astype(dtype), name=name)
            for name, shape in (("kernel", (6, 4)), ("bias", (4,)),
                                ("kernel_2", (4, 3)), ("bias_2", (3,)))]


def gradients(seed=1, dtype="float32"):
    rng = np.random.default_rng(seed)
    return [[tf.constant(rng.normal(size=v.shape).astype(dtype)) for v in variables()]
            for _ in range(STEPS)]


def train(optimizer, traced=True, dtype="float32"):
    """STEPS updates of `variables()` with `gradients()`; the final values."""
    weights = variables(dtype=dtype)
    optimizer.build(weights)
    apply = lambda grads: optimizer.apply(grads, weights)  # noqa: E731
    if traced:
        apply = tf.function(apply)
    for grads in gradients(dtype=dtype):
        apply(grads)
    return [w.numpy() for w in weights]


def assert_all_close(got, expected, rtol=RTOL, atol=ATOL):
    assert len(got) == len(expected)
    for a, b in zip(got, expected):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


@pytest.mark.parametrize("traced", [True, False], ids=["traced", "eager"])
def test_same_updates_as_keras_adamw(traced):
    expected = train(make(keras.optimizers.AdamW), traced)
    got = train(make(FusedAdamW), traced)
    assert_all_close(got, expected)
    # the decay is applied (kernels) and excluded (biases), as in Keras
    no_decay = train(make(FusedAdamW, weight_decay=0.0), traced)
    assert not np.allclose(got[0], no_decay[0], rtol=0, atol=1e-5)
    np.testing.assert_allclose(got[1], no_decay[1], rtol=RTOL, atol=ATOL)


def test_make_optimizer_adam_and_adamw_are_fused_and_match_keras():
    for kind, keras_cls in (("adamw", keras.optimizers.AdamW),
                            ("adam", keras.optimizers.Adam)):
        optimizer = make_optimizer(kind, 1e-2, total_steps=20, warmup_ratio=0.1,
                                   weight_decay=0.1)
        assert isinstance(optimizer, FusedAdamW)
        assert optimizer.name == kind  # the checkpoints' variable paths
        kwargs = {"weight_decay": 0.1} if kind == "adamw" else {}
        reference = keras_cls(WarmupLinearDecay(1e-2, 20, 2), epsilon=1e-6,
                              global_clipnorm=1.0, **kwargs)
        if kind == "adamw":
            reference.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
        assert_all_close(train(optimizer), train(reference))


def test_sparse_embedding_gradients_match_keras():
    """An embedding's gradient is `tf.IndexedSlices`: densified, as Keras does."""

    def run(optimizer):
        keras.utils.set_random_seed(3)
        embedding = keras.layers.Embedding(10, 4)
        embedding.build((None,))
        optimizer.build(embedding.trainable_variables)

        @tf.function
        def step(ids):
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(tf.square(embedding(ids)))
            grads = tape.gradient(loss, embedding.trainable_variables)
            assert isinstance(grads[0], tf.IndexedSlices)
            optimizer.apply(grads, embedding.trainable_variables)

        for ids in ([1, 2, 2], [3, 1, 7], [0, 0, 9]):
            step(tf.constant(ids))
        return [w.numpy() for w in embedding.weights]

    assert_all_close(run(make(FusedAdamW)), run(make(keras.optimizers.AdamW)))


@pytest.mark.slow
def test_amsgrad_and_float16_variables_take_keras_update():
    assert_all_close(train(make(FusedAdamW, amsgrad=True)),
                     train(make(keras.optimizers.AdamW, amsgrad=True)))
    got = train(make(FusedAdamW), dtype="float16")
    expected = train(make(keras.optimizers.AdamW), dtype="float16")
    assert got[0].dtype == np.float16
    assert_all_close(got, expected, rtol=1e-3, atol=1e-3)


def test_traced_update_has_a_fraction_of_keras_ops():
    def graph_ops(optimizer):
        weights = variables()
        optimizer.build(weights)
        apply = tf.function(lambda grads: optimizer.apply(grads, weights))
        graph = apply.get_concrete_function(gradients()[0]).graph
        ops = graph.get_operations()
        return len(ops), sum(op.type == "ResourceApplyAdam" for op in ops)

    keras_ops, keras_fused = graph_ops(make(keras.optimizers.AdamW))
    fused_ops, fused = graph_ops(make(FusedAdamW))
    assert (keras_fused, fused) == (0, 4)  # one kernel per variable
    assert fused_ops < 0.5 * keras_ops, (fused_ops, keras_ops)


def dense_model(seed):
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((6,)), keras.layers.Dense(8, activation="tanh"),
                             keras.layers.Dense(2)])


def fit(model, optimizer, jit_compile=False, epochs=2):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(32, 6)).astype("float32")
    y = rng.integers(0, 2, size=32)
    model.compile(optimizer=optimizer, jit_compile=jit_compile,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(8), epochs=epochs,
              verbose=0, shuffle=False)
    return [w.numpy() for w in model.weights]


@pytest.mark.slow
def test_xla_compiled_fit_matches_keras():
    expected = fit(dense_model(5), make(keras.optimizers.AdamW))
    got = fit(dense_model(5), make(FusedAdamW), jit_compile=True)
    assert_all_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.slow
def test_mirrored_strategy_matches_one_device(cpu_devices):
    """Each replica's half batch, gradients summed by Keras, each variable
    updated on both devices: the one-device weights. (Without clipping:
    Keras' `fit` clips each replica's part on its own, which kdplug's
    `Distiller` corrects, tests/training/test_strategy_parity.py.)"""
    expected = fit(dense_model(6), make(FusedAdamW, global_clipnorm=None))
    strategy = mirrored_strategy(cpu_devices,
                                 cross_device_ops=tf.distribute.ReductionToOneDevice())
    with strategy.scope():
        model = dense_model(6)
        optimizer = make(FusedAdamW, global_clipnorm=None)
    got = fit(model, optimizer)
    assert_all_close(got, expected, rtol=1e-5, atol=1e-6)
    # both replicas' copies of a slot were updated
    momentum = optimizer._momentums[0].value
    copies = [v.numpy() for v in momentum.values]
    assert len(copies) == 2 and np.abs(copies[0]).max() > 0
    np.testing.assert_array_equal(copies[0], copies[1])


def test_keras_round_trip_keeps_the_class_and_its_state(tmp_path):
    optimizer = make(FusedAdamW)
    restored = FusedAdamW.from_config(optimizer.get_config())
    assert restored.get_config() == optimizer.get_config()
    model = dense_model(7)
    fit(model, optimizer)
    path = str(tmp_path / "model.keras")
    model.save(path)
    loaded = keras.saving.load_model(path)
    assert type(loaded.optimizer) is FusedAdamW
    assert int(loaded.optimizer.iterations) == int(optimizer.iterations) == 8
    assert_all_close([v.numpy() for v in loaded.optimizer.variables],
                     [v.numpy() for v in optimizer.variables], rtol=0, atol=0)
