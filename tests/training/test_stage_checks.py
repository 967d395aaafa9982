"""`StageChecks`, `BatchMix` and the collapse checks: the warnings a stage
owes its user, computed by hand on small cases (issues #47 and #54)."""

import math

import keras
import numpy as np
import pytest
import tensorflow as tf

from kdplug.data.batch_mix import BatchMix
from kdplug.data.batch_mix import dominated_probability
from kdplug.evaluation.collapse import collapse_check
from kdplug.evaluation.collapse import escape_step
from kdplug.evaluation.collapse import plateau_check
from kdplug.evaluation.report import check_lines
from kdplug.evaluation.report import collapse_lines
from kdplug.training.callbacks import StageChecks


def test_dispersion_ratio_by_hand():
    # Batches [0,0,1,1] and [0,1,1,1] then [0,0,0,1] and [1,1,0,0]:
    # class-1 means 0.5, 0.75, 0.25, 0.5 (one-hot: both components move),
    # average (0.5, 0.5); |m_b - avg|^2 = 0, 0.125, 0.125, 0 -> D = 0.0625.
    # Per-example variance summed over both components: 0.5; n = 4, N = 16:
    # E = 0.5 / 4 * 12 / 15 = 0.1, so the ratio is 0.625.
    mix = BatchMix("classes")
    for batch in ([0, 0, 1, 1], [0, 1, 1, 1], [0, 0, 0, 1], [1, 1, 0, 0]):
        mix.add(np.array(batch))
    s = mix.summary()
    assert s["ratio"] == pytest.approx(0.625)
    assert s["class_shares"] == [0.5, 0.5]
    assert s["dominated_batches"] == 0.0
    # 2 * P(Binomial(4, 1/2) >= 4) = 2 / 16 (>= 90% of 4 is all 4)
    assert s["expected_dominated_batches"] == pytest.approx(0.125)
    # threshold: 1 + 5 sqrt(2 / ((2 - 1) * (4 - 1)))
    assert s["threshold"] == pytest.approx(1 + 5 * math.sqrt(2 / 3))


def test_values_and_vectors_and_skipped_labels():
    values = BatchMix("values")
    for batch in ([1.0, 2.0], [3.0, 4.0], [1.0, 2.0], [3.0, 4.0]):
        values.add(np.array(batch))
    # batch means 1.5, 3.5, 1.5, 3.5: D = 1; variance of 1..4 (x2): 1.25;
    # E = 1.25 / 2 * 6 / 7
    assert values.summary()["ratio"] == pytest.approx(1 / (1.25 / 2 * 6 / 7))
    unlabelled = BatchMix("classes")
    for _ in range(5):
        unlabelled.add(np.array([-1, -1]))
    assert unlabelled.summary()["reason"] == "no labelled batches"
    tokens = BatchMix("classes")
    tokens.add(np.array([[0, 1, 2], [1, 1, -1]]))
    assert not tokens.summary()["measured"]
    assert "per token" in tokens.summary()["reason"]
    assert not BatchMix.for_task(None).summary()["measured"]
    assert dominated_probability(10, [0.5, 0.5]) == pytest.approx(2 * 11 / 1024)


def test_tap_counts_one_epoch_of_labels_and_passes_batches_through():
    labels = np.repeat([0, 1], 32).astype("int32")
    ds = tf.data.Dataset.from_tensor_slices(({"x": np.arange(64.0)}, labels)).batch(8)
    mix = BatchMix("classes")
    tapped = mix.tap(ds)
    first = [(x["x"].numpy(), y.numpy()) for x, y in tapped]
    list(tapped)  # a second epoch is not counted
    assert mix.batches == 8 and mix.examples == 64
    assert [y.tolist() for _, y in first] == [y.tolist() for _, y in ds.as_numpy_iterator()]
    assert mix.far_from_random()  # every batch is one class
    assert mix.summary()["dominated_batches"] == 1.0


def test_collapse_and_plateau_by_hand():
    labels = np.array([0] * 60 + [1] * 40)
    one_class = np.tile([[3.0, -3.0]], (100, 1))
    found = collapse_check("class", one_class, labels)
    assert found["collapsed"] and found["prediction_share"] == 1.0
    assert found["label_share"] == 0.6
    learnt = np.eye(2)[labels] * 2.0
    assert not collapse_check("class", learnt, labels)["collapsed"]
    # a split that is 90% one class: predicting it is not called collapse
    skewed = np.array([0] * 90 + [1] * 10)
    assert not collapse_check("class", one_class, skewed)["collapsed"]
    # regression: flat predictions; multi-label: no positive prediction
    y = np.linspace(0, 1, 50)
    assert collapse_check("float", np.full(50, 0.5) + 1e-4 * y, y)["collapsed"]
    assert not collapse_check("float", y * 0.8, y)["collapsed"]
    multi = (np.arange(150).reshape(50, 3) % 4 == 0).astype("float32")
    assert collapse_check("multi", -np.ones((50, 3)), multi)["collapsed"]
    assert not collapse_check("multi", multi * 2 - 1, multi)["collapsed"]
    # tokens: ignored positions (-1) do not count
    tags = np.tile([0, 1, 2, -1], (10, 1))
    assert collapse_check("tags", np.tile([[[5.0, 0, 0]]], (10, 4, 1)), tags)["collapsed"]
    assert not collapse_check("class", one_class[:5], labels[:5])["checked"]
    assert plateau_check(math.log(3) * 1.03, 3) and not plateau_check(0.5, 3)
    assert not plateau_check(float("nan"), 2) and not plateau_check(None, 2)


def test_escape_step_by_hand():
    # ln 2 = 0.693, the level 0.9 ln 2 = 0.624; windows of 5 logged at
    # steps 105, 110, ...: the window ending at 115 is the first below it,
    # its last step the 15th of the stage.
    steps, losses = [105, 110, 115, 120], [0.70, 0.63, 0.62, 0.30]
    assert escape_step(steps, losses, 2, window=5) == 15
    assert escape_step(steps, [0.70, None, float("nan"), 0.60], 2, window=5) == 20
    assert escape_step(steps, [0.69] * 4, 2, window=5) is None
    # three classes: ln 3 = 1.099, the level 0.989
    assert escape_step([1, 2, 3], [1.05, 0.99, 0.98], 3) == 3
    assert escape_step([], [], 2) is None


def constant_model(bias):
    """A classifier that predicts `bias`'s largest class whatever its input."""
    inputs = keras.Input((4,))
    logits = keras.layers.Dense(2, kernel_initializer="zeros",
                                bias_initializer=keras.initializers.Constant(bias))(inputs)
    return keras.Model(inputs, logits)


def val_data(n=60):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype("float32")
    return tf.data.Dataset.from_tensor_slices((x, (x[:, 0] > 0).astype("int32"))).batch(16)


def test_stage_checks_warn_once_on_a_collapsed_student(kdplug_log):
    checks = StageChecks("distill", None, constant_model([2.0, -2.0]), val_data(),
                         "class", {"hard_ce": 2})
    for epoch in range(3):
        checks.on_epoch_end(epoch, {"hard_ce": 0.6931})
    warnings = [m for m in kdplug_log() if "has not left the majority class" in m]
    assert len(warnings) == 1
    assert "predicts class 0 for 100.0%" in warnings[0] and "hard_ce" in warnings[0]
    assert "student.init: teacher" in warnings[0]
    summary = checks.summary()
    assert summary["collapsed"] and [c["epoch"] for c in summary["collapse"]] == [1, 2, 3]
    assert check_lines(summary)[-1] == "at one answer after epoch(s) 1, 2, 3 (**collapsed at the end**)"


def test_stage_checks_stay_quiet_on_a_trained_student(kdplug_log):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(val_data(), epochs=30, verbose=0)
    mix = BatchMix("classes")
    for b in np.random.default_rng(0).integers(0, 2, size=(10, 16)):
        mix.add(b)
    checks = StageChecks("distill", mix, model, val_data(), "class", {"hard_ce": 2})
    checks.on_epoch_end(0, {"hard_ce": 0.35})
    assert not any("majority class" in m or "not random" in m for m in kdplug_log())
    assert not checks.summary()["collapsed"]
    assert check_lines(checks.summary())[0].startswith("label mix of the first epoch's 10")


def test_stage_checks_warn_on_label_blocked_batches(kdplug_log):
    mix = BatchMix("classes")
    for b in [[0] * 16] * 5 + [[1] * 16] * 5:
        mix.add(np.array(b))
    checks = StageChecks("distill", mix)
    checks.on_epoch_end(0, {})
    checks.on_epoch_end(1, {})
    warnings = [m for m in kdplug_log() if "not random samples" in m]
    assert len(warnings) == 1 and "100.0% of the batches >= 90% one class" in warnings[0]
    assert check_lines(checks.summary())[0].startswith("**not random samples of the split**")


def test_summary_flags_a_collapsed_model():
    report = {role: {"collapse": collapse_check(
        "class", np.tile([[1.0, 0.0]], (40, 1)) if role == "student" else np.eye(2)[
            np.arange(40) % 2], np.arange(40) % 2)} for role in ("teacher", "student")}
    lines = collapse_lines(report)
    assert len([line for line in lines if line]) == 1
    assert lines[1].startswith("**Warning: the student has collapsed**: it predicts class 0")


@pytest.mark.slow
def test_distill_warns_about_label_sorted_batches_and_not_about_shuffled_ones(
        kdplug_log):
    # A tf.data pipeline that batches a label-sorted split without shuffling:
    # distill() counts the first epoch's labels and says so once.
    import kdplug

    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 4)).astype("float32")
    y = np.sort((x[:, 0] > 0).astype("int32"))
    make = lambda: keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])  # noqa: E731
    teacher, student = make(), make()
    ordered = tf.data.Dataset.from_tensor_slices((x, y)).batch(16)
    history = kdplug.distill(teacher=teacher, student=student, train_data=ordered,
                             epochs=2, verbose=0)
    assert history.checks["batch_mix"]["far_from_random"]
    assert history.checks["batch_mix"]["batches"] == 16  # the first epoch only
    assert sum("not random samples" in m for m in kdplug_log()) == 1
    shuffled = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(256, seed=0).batch(16)
    history = kdplug.distill(teacher=teacher, student=student, train_data=shuffled,
                             epochs=1, verbose=0)
    assert not history.checks["batch_mix"]["far_from_random"]
    assert sum("not random samples" in m for m in kdplug_log()) == 1
    arrays = kdplug.distill(teacher=teacher, student=student, train_data=(x, y),
                            epochs=1, verbose=0)
    assert arrays.checks["batch_mix"] == {
        "measured": False, "reason": "not measured: arrays are shuffled by fit"}


def test_distill_writes_epoch_lines_not_progress_bars_into_a_file(capsys):
    # stdout is not a terminal under pytest's capture: "auto" gives one line
    # per epoch, no carriage returns or ANSI codes
    import kdplug

    x = np.random.default_rng(1).normal(size=(64, 4)).astype("float32")
    y = (x[:, 0] > 0).astype("int32")
    make = lambda: keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])  # noqa: E731
    kdplug.distill(teacher=make(), student=make(), train_data=(x, y), epochs=2)
    out = capsys.readouterr().out
    assert "Epoch 2/2" in out and "\r" not in out and "\x1b[" not in out
