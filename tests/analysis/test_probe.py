import dataclasses

import numpy as np
import pytest
from sklearn.preprocessing import StandardScaler

from kdplug.analysis import probe
from kdplug.analysis.probe import ProbeResult
from kdplug.analysis.probe import probe_layers
from kdplug.analysis.probe import train_probe


def blobs(rng, n, dim=16, num_classes=2, separation=6.0):
    """Gaussian blobs (unit variance) whose means are `separation` apart along
    random directions: linearly separable up to a negligible tail."""
    means = rng.normal(size=(num_classes, dim))
    means *= separation / 2 / np.linalg.norm(means, axis=1, keepdims=True)
    y = rng.permutation(np.arange(n) % num_classes)
    return means[y] + rng.normal(size=(n, dim)), y


def random_task(rng, n, dim=16, num_classes=2):
    """Features and balanced labels drawn independently: nothing to learn."""
    return rng.normal(size=(n, dim)), rng.permutation(np.arange(n) % num_classes)


@pytest.mark.parametrize("kind", ["logistic", "mlp"])
@pytest.mark.parametrize("num_classes", [2, 3])
def test_separable_representation_is_probed_near_perfectly(kind, num_classes):
    rng = np.random.default_rng(1)
    x, y = blobs(rng, 400, num_classes=num_classes)
    result = train_probe(x[:250], y[:250], x[250:], y[250:], kind=kind, seed=0)
    assert result.test_accuracy >= 0.97
    assert result.train_accuracy >= 0.97
    assert result.dev_accuracy is None
    assert result.kind == kind and result.seed == 0
    assert 1 <= result.iterations <= 200


@pytest.mark.parametrize("kind", ["logistic", "mlp"])
@pytest.mark.parametrize("num_classes", [2, 4])
def test_random_representation_is_at_chance(kind, num_classes):
    # test labels are independent of everything the probe saw, so its test
    # accuracy is Binomial(300, 1/C) / 300: std sqrt(p(1-p)/300) = 0.029 for 2
    # classes, 0.025 for 4; 0.1 is > 3.4 standard deviations.
    rng = np.random.default_rng(2)
    x, y = random_task(rng, 700, num_classes=num_classes)
    result = train_probe(x[:400], y[:400], x[400:], y[400:], kind=kind)
    assert abs(result.test_accuracy - 1 / num_classes) < 0.1
    if kind == "mlp":  # it memorises the training labels, which says nothing
        assert result.train_accuracy > result.test_accuracy + 0.2


@pytest.mark.parametrize("kind", ["logistic", "mlp"])
def test_same_seed_same_result(kind):
    rng = np.random.default_rng(3)
    x, y = blobs(rng, 300, separation=1.5)  # overlapping: seeds can matter
    args = (x[:150], y[:150], x[150:], y[150:])
    first = train_probe(*args, dev_x=x[:50], dev_y=y[:50], kind=kind, seed=7,
                        max_iter=30, hidden_dim=8)
    again = train_probe(*args, dev_x=x[:50], dev_y=y[:50], kind=kind, seed=7,
                        max_iter=30, hidden_dim=8)
    assert first == again
    assert first.dev_accuracy is not None
    if kind == "mlp":
        assert first.iterations == 30  # the fixed budget, no warning raised


def test_mlp_seeds_give_different_probes():
    rng = np.random.default_rng(4)
    x, y = random_task(rng, 300)
    results = {train_probe(x[:200], y[:200], x[200:], y[200:], kind="mlp", seed=s,
                           max_iter=20).train_accuracy for s in range(3)}
    assert len(results) > 1


def test_probe_layers_mean_and_std_over_seeds():
    rng = np.random.default_rng(5)
    y = rng.permutation(np.arange(240) % 2)
    labels = {"train": y[:120], "dev": y[120:160], "test": y[160:]}
    features = {}
    for name, noise in (("layer_2", 3.0), ("layer_1", 1.0), ("pooled", 0.5)):
        x = y[:, None] + noise * rng.normal(size=(240, 6 if name == "pooled" else 4))
        features[name] = {"train": x[:120], "dev": x[120:160], "test": x[160:]}
    table = probe_layers(features, labels, kind="mlp", seeds=(0, 1, 2),
                         max_iter=25, hidden_dim=8)
    assert list(table) == ["layer_2", "layer_1", "pooled"]  # input order
    for name, row in table.items():
        tests = [s["test_accuracy"] for s in row["seeds"]]
        assert row["test_accuracy"] == pytest.approx(np.mean(tests))
        assert row["test_std"] == pytest.approx(np.std(tests, ddof=1))
        assert row["dev_accuracy"] == pytest.approx(
            np.mean([s["dev_accuracy"] for s in row["seeds"]]))
        assert row["train_accuracy"] == pytest.approx(
            np.mean([s["train_accuracy"] for s in row["seeds"]]))
        assert [s["seed"] for s in row["seeds"]] == [0, 1, 2]
        # each seed is the same probe train_probe would train
        single = train_probe(features[name]["train"], labels["train"],
                             features[name]["test"], labels["test"],
                             features[name]["dev"], labels["dev"], kind="mlp",
                             seed=1, max_iter=25, hidden_dim=8)
        assert row["seeds"][1] == dataclasses.asdict(single)
    assert all(row["test_std"] > 0 for row in table.values())  # seeds differ


def test_probe_layers_one_seed_and_no_dev():
    rng = np.random.default_rng(6)
    x, y = blobs(rng, 200)
    table = probe_layers({"layer_1": {"train": x[:100], "dev": None, "test": x[100:]}},
                         {"train": y[:100], "dev": None, "test": y[100:]})
    row = table["layer_1"]
    assert row["test_std"] == 0.0
    assert row["dev_accuracy"] is None
    assert row["seeds"][0]["kind"] == "logistic"
    assert row["test_accuracy"] == row["seeds"][0]["test_accuracy"]


def test_scaler_is_fit_on_the_training_split_only(monkeypatch):
    fitted = []
    fit = StandardScaler.fit

    def recording_fit(self, x, *args, **kwargs):
        fitted.append(np.array(x))
        return fit(self, x, *args, **kwargs)

    monkeypatch.setattr(StandardScaler, "fit", recording_fit)
    rng = np.random.default_rng(7)
    x, y = blobs(rng, 200)
    train_probe(x[:100], y[:100], x[100:150] + 50.0, y[100:150],
                dev_x=x[150:], dev_y=y[150:])
    assert len(fitted) == 1
    np.testing.assert_array_equal(fitted[0], x[:100])


def test_logistic_probe_is_multinomial_lbfgs_with_fixed_c():
    model = probe._make("logistic", seed=3, max_iter=50, hidden_dim=64)
    assert (model.C, model.solver, model.max_iter, model.random_state) == (
        1.0, "lbfgs", 50, 3)
    mlp = probe._make("mlp", seed=3, max_iter=50, hidden_dim=16)
    assert (mlp.hidden_layer_sizes, mlp.early_stopping, mlp.max_iter,
            mlp.random_state) == ((16,), False, 50, 3)


X = np.zeros((4, 3))
Y = np.array([0, 1, 0, 1])


@pytest.mark.parametrize("kwargs, match", [
    ({"kind": "svm"}, r"kind must be one of 'logistic', 'mlp', got 'svm'"),
    ({"train_x": np.zeros(4)}, r"train_x must be a 2-D float array.*\(4,\)"),
    ({"test_x": [["a", "b", "c"]] * 4}, r"test_x must be a 2-D float array"),
    ({"train_x": np.full((4, 3), np.nan)}, r"train_x must be finite"),
    ({"train_y": np.array([0, 1, 0])},
     r"train_y .*one per row of train_x \(4\).*\(3,\)"),
    ({"train_y": np.zeros(4, int)},
     r"train_y must hold at least 2 classes, got only \[0\]"),
    ({"test_x": np.zeros((4, 2))}, r"test_x must have train_x's 3 features, got 2"),
    ({"dev_x": X}, r"dev_x and dev_y must be given together"),
    ({"max_iter": 0}, r"max_iter must be an integer >= 1"),
])
def test_bad_inputs(kwargs, match):
    args = {"train_x": X, "train_y": Y, "test_x": X, "test_y": Y, **kwargs}
    with pytest.raises(ValueError, match=match):
        train_probe(**args)


def test_probe_layers_bad_inputs():
    labels = {"train": Y, "dev": None, "test": Y}
    with pytest.raises(ValueError, match="features must be a non-empty dict"):
        probe_layers({}, labels)
    with pytest.raises(ValueError, match=r"features\['l'\] must be a dict with 'train'"):
        probe_layers({"l": {"train": X}}, labels)
    with pytest.raises(ValueError, match=r"features\['l'\]\['dev'\] and labels\['dev'\]"):
        probe_layers({"l": {"train": X, "dev": X, "test": X}}, labels)
    with pytest.raises(ValueError, match="seeds must hold at least one"):
        probe_layers({"l": {"train": X, "test": X}}, labels, seeds=())
    with pytest.raises(ValueError, match="unknown probe options"):
        probe_layers({"l": {"train": X, "test": X}}, labels, hidden=3)
    with pytest.raises(ValueError, match="'logistic', 'mlp'"):
        probe_layers({"l": {"train": X, "test": X}}, labels, kind="tree")


def test_probe_result_fields():
    assert [f.name for f in dataclasses.fields(ProbeResult)] == [
        "train_accuracy", "dev_accuracy", "test_accuracy", "seed", "kind", "iterations"]


def test_train_fraction_gives_logistic_seeds_their_own_sample():
    """lbfgs is deterministic: with the whole training part every seed gives
    the same probe; with a seeded 60% subsample the seeds differ, and each
    subsample keeps 60% of every class (3 of 5, 6 of 10)."""
    from kdplug.analysis.probe import subsample_rows

    labels = np.array([0] * 5 + [1] * 10)
    rows = subsample_rows(labels, 0.6, seed=3)
    assert (labels[rows] == 0).sum() == 3 and (labels[rows] == 1).sum() == 6
    assert np.array_equal(rows, subsample_rows(labels, 0.6, seed=3))
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 8))
    y = (x[:, 0] + 0.8 * rng.normal(size=200) > 0).astype(int)
    whole = [train_probe(x[:150], y[:150], x[150:], y[150:], seed=s) for s in (0, 1)]
    assert whole[0].test_accuracy == whole[1].test_accuracy
    assert whole[0].train_accuracy == whole[1].train_accuracy
    sub = [train_probe(x[:150], y[:150], x[150:], y[150:], seed=s, train_fraction=0.6)
           for s in range(4)]
    assert len({r.train_accuracy for r in sub}) > 1
    with pytest.raises(ValueError, match="train_fraction"):
        train_probe(x[:150], y[:150], x[150:], y[150:], train_fraction=0.0)
