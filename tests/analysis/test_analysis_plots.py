import json

import matplotlib.image
import numpy as np
import pytest

from kdplug.analysis import behaviour
from kdplug.analysis import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def read_png(path):
    data = open(path, "rb").read()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 5_000
    image = matplotlib.image.imread(path)
    assert image[..., :3].std() > 0.05  # something is drawn
    return image


def calibrations():
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(500, 2)) * 2
    teacher = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    labels = (rng.random(500) < teacher[:, 1]).astype(int)
    student = teacher ** 3
    student /= student.sum(1, keepdims=True)
    return {"teacher": behaviour.calibration(labels, teacher),
            "student": behaviour.calibration(labels, student)}


def test_reliability_diagram_one_panel_per_model(tmp_path):
    cals = calibrations()
    assert any(b["n"] == 0 for b in cals["teacher"]["bins"])  # bins below 0.5
    path = plots.reliability_diagram(cals, str(tmp_path / "sub" / "rel.png"),
                                     title="dev set")
    assert path == str(tmp_path / "sub" / "rel.png")
    image = read_png(path)
    assert image.shape[:2] == (528, 2 * 432)  # 4.4 in x (2 x 3.6 in) at 120 dpi
    image = read_png(plots.reliability_diagram({"student": cals["student"]},
                                               tmp_path / "one.png"))
    assert image.shape[:2] == (528, 432)


def test_reliability_diagram_from_a_json_report_with_empty_bins(tmp_path):
    # three examples, ten bins: seven empty bins (accuracy None after JSON)
    report = behaviour.behaviour_report([0, 1, 1], [[0.9, 0.1], [0.3, 0.7], [0.6, 0.4]],
                                        [[0.55, 0.45], [0.5, 0.5], [1.0, 0.0]], None)
    cals = json.loads(json.dumps(report["calibration"]))
    assert sum(b["n"] == 0 for b in cals["teacher"]["bins"]) == 7
    read_png(plots.reliability_diagram(cals, tmp_path / "rel.png"))


def test_reliability_diagram_with_no_examples(tmp_path):
    empty = {"ece": None, "bins": [{"lo": k / 10, "hi": (k + 1) / 10, "n": 0,
                                    "accuracy": None, "confidence": None}
                                   for k in range(10)]}
    read_png(plots.reliability_diagram({"student": empty}, tmp_path / "empty.png"))


TABLE = {
    "teacher": {task: {f"layer_{i}": 0.5 + 0.05 * i + 0.01 * j for i in range(1, 7)}
                for j, task in enumerate(["SentLen", "WC", "BShift", "TreeDepth"])},
    "student": {task: {f"layer_{i}": 0.5 + 0.04 * i for i in range(1, 4)}
                for task in ["SentLen", "WC", "BShift", "TreeDepth"]},
    "bilstm": {task: {"pooled": 0.6} for task in ["SentLen", "WC", "BShift",
                                                  "TreeDepth"]},
}


def test_probing_heatmap_with_different_layer_counts(tmp_path):
    path = plots.probing_heatmap(TABLE, str(tmp_path / "probing.png"),
                                 title="probing")
    image = read_png(path)
    # height 0.45 in per row of the deepest model (6) + 2.3 in, at 120 dpi
    assert image.shape[0] == round((0.45 * 6 + 2.3) * 120)


def test_probing_heatmap_missing_cells_and_empty_models(tmp_path):
    table = {"teacher": {"SentLen": {"layer_1": 0.7, "layer_2": 0.8},
                         "WC": {"layer_2": 0.4}},  # WC not probed on layer_1
             "student": {}}
    read_png(plots.probing_heatmap(table, tmp_path / "partial.png"))
    # one value everywhere: a degenerate colour range still draws
    read_png(plots.probing_heatmap({"bilstm": {"SentLen": {"pooled": 0.6}}},
                                   tmp_path / "single.png"))


def test_plots_reject_empty_input(tmp_path):
    with pytest.raises(ValueError, match="calibrations must be a non-empty dict"):
        plots.reliability_diagram({}, tmp_path / "x.png")
    with pytest.raises(ValueError, match="table must be a non-empty dict"):
        plots.probing_heatmap({}, tmp_path / "x.png")
