import json
import math
import subprocess
import sys

import numpy as np
import pytest

from kdplug.analysis import behaviour


def one_hot_ish(predictions, num_classes, top=0.6):
    """Rows with `top` on the predicted class and the rest spread evenly."""
    rest = (1 - top) / (num_classes - 1)
    probs = np.full((len(predictions), num_classes), rest)
    probs[np.arange(len(predictions)), predictions] = top
    return probs


# 8 examples, 3 classes; R = right, W = wrong:
#   i  label  teacher  student   cell
#   0    0      0 R      0 R     both_right
#   1    1      1 R      2 W     teacher_only
#   2    2      2 R      2 R     both_right
#   3    0      1 W      1 W     both_wrong, same prediction
#   4    1      1 R      0 W     teacher_only
#   5    2      0 W      2 R     student_only
#   6    0      2 W      1 W     both_wrong, different predictions
#   7    1      1 R      1 R     both_right
LABELS = np.array([0, 1, 2, 0, 1, 2, 0, 1])
TEACHER = one_hot_ish([0, 1, 2, 1, 1, 0, 2, 1], 3)
STUDENT = one_hot_ish([0, 2, 2, 1, 0, 2, 1, 1], 3, top=0.5)


def test_agreement_counts_equal_argmax():
    # same prediction at 0 (0), 2 (2), 3 (1), 7 (1): 4 of 8
    assert behaviour.agreement(TEACHER, STUDENT) == 0.5
    assert behaviour.agreement(TEACHER, TEACHER) == 1.0


def test_error_overlap_two_by_two_table():
    table = behaviour.error_overlap(LABELS, TEACHER, STUDENT)
    assert table == {
        "both_right": 3,       # 0, 2, 7
        "teacher_only": 2,     # 1, 4
        "student_only": 1,     # 5
        "both_wrong": 2,       # 3, 6
        "n": 8,
        "teacher_accuracy": 5 / 8,
        "student_accuracy": 4 / 8,
        "agreement": 4 / 8,
        # the student's 4 errors (1, 3, 4, 6): the teacher also misses 3 and 6
        "student_errors_teacher_also_makes": 2 / 4,
        # of 3 and 6 only 3 has the same wrong class
        "both_wrong_same_prediction": 1 / 2,
    }
    assert sum(table[k] for k in ("both_right", "teacher_only", "student_only",
                                  "both_wrong")) == table["n"]


def test_error_overlap_fractions_are_nan_without_errors():
    table = behaviour.error_overlap([0, 1], [[0.9, 0.1], [0.2, 0.8]],
                                    [[0.6, 0.4], [0.4, 0.6]])
    assert table["both_right"] == 2
    assert math.isnan(table["student_errors_teacher_also_makes"])
    assert math.isnan(table["both_wrong_same_prediction"])


# Calibration by hand, 2 classes, 4 bins [0, .25], (.25, .5], (.5, .75], (.75, 1]:
#   i  probs       label  conf  predicted  right  bin
#   0  [.9, .1]      0     .9      0        yes    3
#   1  [.2, .8]      0     .8      1        no     3
#   2  [.7, .3]      0     .7      0        yes    2
#   3  [.5, .5]      1     .5      0 (1st)  no     1  (.5 is the right edge of bin 1)
#   4  [.4, .6]      1     .6      1        yes    2
# bin 1: acc 0,   conf .5,             gap .5
# bin 2: acc 1,   conf (.7 + .6)/2 = .65, gap .35
# bin 3: acc 1/2, conf (.9 + .8)/2 = .85, gap .35
# ECE = 1/5 * .5 + 2/5 * .35 + 2/5 * .35 = .1 + .14 + .14 = .38; MCE = .5
CAL_PROBS = np.array([[0.9, 0.1], [0.2, 0.8], [0.7, 0.3], [0.5, 0.5], [0.4, 0.6]])
CAL_LABELS = np.array([0, 0, 0, 1, 1])


def test_calibration_by_hand():
    cal = behaviour.calibration(CAL_LABELS, CAL_PROBS, num_bins=4)
    assert cal["ece"] == pytest.approx(0.38)
    assert cal["mce"] == pytest.approx(0.5)
    assert [b["n"] for b in cal["bins"]] == [0, 1, 2, 2]
    assert cal["bins"][0] == {"lo": 0.0, "hi": 0.25, "n": 0, "accuracy": None,
                              "confidence": None}
    assert cal["bins"][1]["accuracy"] == 0.0
    assert cal["bins"][2]["confidence"] == pytest.approx(0.65)
    assert cal["bins"][3]["accuracy"] == 0.5
    assert cal["accuracy"] == pytest.approx(3 / 5)
    assert cal["mean_confidence"] == pytest.approx((0.9 + 0.8 + 0.7 + 0.5 + 0.6) / 5)
    # Brier: sum_c (p_c - onehot_c)^2 per example:
    # .1^2+.1^2=.02, .8^2+.8^2=1.28, .3^2+.3^2=.18, .5^2+.5^2=.5, .4^2+.4^2=.32
    assert cal["brier"] == pytest.approx((0.02 + 1.28 + 0.18 + 0.5 + 0.32) / 5)
    # NLL: -log p[label] = -log .9, -log .2, -log .7, -log .5, -log .6
    assert cal["nll"] == pytest.approx(
        -(math.log(0.9) + math.log(0.2) + math.log(0.7) + math.log(0.5)
          + math.log(0.6)) / 5)
    assert cal["nll"] == pytest.approx(0.6550892, abs=1e-6)
    assert cal["n"] == 5 and cal["num_bins"] == 4


def test_calibration_bin_edges_are_right_closed():
    # confidences .25, .5, .75, 1.0 with 4 bins: each lands at the right edge
    # of bins 0, 1, 2, 3; the first bin also takes its left edge
    probs = np.array([[0.25, 0.25, 0.25, 0.25], [0.5, 0.5, 0, 0],
                      [0.75, 0.25, 0, 0], [1.0, 0, 0, 0]])
    cal = behaviour.calibration([0, 0, 0, 0], probs, num_bins=4)
    assert [b["n"] for b in cal["bins"]] == [1, 1, 1, 1]
    assert [b["confidence"] for b in cal["bins"]] == [0.25, 0.5, 0.75, 1.0]
    # ten bins: 0.5 is in (0.4, 0.5], 0.3 in (0.2, 0.3], 1.0 in (0.9, 1.0]
    probs = np.array([[0.5, 0.5, 0.0, 0.0], [0.3, 0.3, 0.3, 0.1]])
    cal = behaviour.calibration([0, 0], probs, num_bins=10)
    assert [b["n"] for b in cal["bins"]] == [0, 0, 1, 0, 1, 0, 0, 0, 0, 0]
    cal = behaviour.calibration([0], [[1.0, 0.0]], num_bins=10)
    assert cal["bins"][9]["n"] == 1 and cal["ece"] == 0.0 and cal["mce"] == 0.0
    assert cal["bins"][9]["lo"] == 0.9 and cal["bins"][9]["hi"] == 1.0


def test_calibration_nll_is_clipped():
    cal = behaviour.calibration([1], [[1.0, 0.0]])
    assert cal["nll"] == pytest.approx(-math.log(1e-12))
    assert cal["brier"] == pytest.approx(2.0)


def synthetic_probs(rng, n, num_classes, scale):
    logits = rng.normal(size=(n, num_classes)) * scale
    e = np.exp(logits - logits.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def draw_labels(rng, probs):
    u = rng.random(len(probs))[:, None]
    return (u > probs.cumsum(1)).sum(1).clip(0, probs.shape[1] - 1)


def test_calibrated_model_has_small_ece_and_overconfident_one_large():
    rng = np.random.default_rng(0)
    probs = synthetic_probs(rng, 20_000, 3, scale=2.0)
    labels = draw_labels(rng, probs)  # labels drawn from the model's own probs
    calibrated = behaviour.calibration(labels, probs)
    # sampling noise per bin ~ sqrt(.25 / n_b) with n_b in the thousands
    assert calibrated["ece"] < 0.02
    sharp = probs ** 4
    sharp /= sharp.sum(1, keepdims=True)  # same argmax, much more confident
    over = behaviour.calibration(labels, sharp)
    assert over["accuracy"] == calibrated["accuracy"]
    assert over["mean_confidence"] > calibrated["mean_confidence"] + 0.1
    assert over["ece"] > 0.1
    assert over["brier"] > calibrated["brier"] and over["nll"] > calibrated["nll"]


def test_accuracy_by_bucket_by_hand():
    values = [3, 12, 25, 10, 40]
    correct = {"teacher": np.array([True, False, True, True, True]),
               "student": np.array([False, False, True, True, False])}
    rows = behaviour.accuracy_by_bucket(values, correct, [0, 10, 20, 30, 35, math.inf])
    assert rows == [
        {"bucket": "0-9", "lo": 0, "hi": 10, "n": 1, "teacher": 1.0, "student": 0.0},
        # 12 and 10 (10 is the left edge, so it is in [10, 20))
        {"bucket": "10-19", "lo": 10, "hi": 20, "n": 2, "teacher": 0.5, "student": 0.5},
        {"bucket": "20-29", "lo": 20, "hi": 30, "n": 1, "teacher": 1.0, "student": 1.0},
        {"bucket": "30-34", "lo": 30, "hi": 35, "n": 0, "teacher": None, "student": None},
        {"bucket": "35+", "lo": 35, "hi": math.inf, "n": 1, "teacher": 1.0,
         "student": 0.0},
    ]
    # 40 is outside [0, 30): in no bucket; with the last edge included, 30 counts
    rows = behaviour.accuracy_by_bucket([5, 30, 40], {"m": [True, False, True]},
                                        [0, 20, 30], include_last_edge=True)
    assert [(r["bucket"], r["n"], r["m"]) for r in rows] == [
        ("0-19", 1, 1.0), ("20-30", 1, 0.0)]


def test_accuracy_by_bucket_float_names():
    rows = behaviour.accuracy_by_bucket([0.55, 0.65, 0.65], {"m": [1, 0, 1]},
                                        [0.5, 0.6, 0.7])
    assert [(r["bucket"], r["n"], r["m"]) for r in rows] == [
        ("0.50-0.60", 1, 1.0), ("0.60-0.70", 2, 0.5)]


def test_length_buckets_default_edges():
    lengths = [0, 10, 11, 15, 31, 100]
    labels = [0, 0, 1, 1, 0, 1]
    teacher = one_hot_ish([0, 1, 1, 1, 0, 1], 2)   # wrong on 1
    student = one_hot_ish([1, 1, 0, 1, 0, 0], 2)   # wrong on 0, 1, 2, 5
    rows = behaviour.length_buckets(lengths, labels,
                                    {"teacher": teacher, "student": student})
    assert [r["bucket"] for r in rows] == ["0-10", "11-15", "16-20", "21-25",
                                           "26-30", "31+"]
    assert [r["n"] for r in rows] == [2, 2, 0, 0, 0, 2]
    assert [r["teacher"] for r in rows] == [0.5, 1.0, None, None, None, 1.0]
    assert [r["student"] for r in rows] == [0.0, 0.5, None, None, None, 0.5]
    rows = behaviour.length_buckets(lengths, labels, {"teacher": teacher},
                                    edges=[0, 20, math.inf])
    assert [(r["bucket"], r["n"]) for r in rows] == [("0-19", 4), ("20+", 2)]


def test_confidence_buckets_by_teacher_confidence():
    # teacher max probs .5, .55, .6, .7, .95, 1.0; buckets [lo, hi), last closed
    teacher = np.array([[0.5, 0.5], [0.55, 0.45], [0.4, 0.6], [0.3, 0.7],
                        [0.95, 0.05], [0.0, 1.0]])
    labels = [1, 0, 1, 0, 0, 1]
    # teacher predicts 0, 0, 1, 1, 0, 1: right on 1, 2, 4, 5
    student = one_hot_ish([1, 1, 1, 0, 1, 1], 2)  # right on 0, 2, 3, 5
    rows = behaviour.confidence_buckets(labels, teacher,
                                        {"teacher": teacher, "student": student})
    assert [r["bucket"] for r in rows] == ["0.50-0.60", "0.60-0.70", "0.70-0.80",
                                           "0.80-0.90", "0.90-1.00"]
    assert [r["n"] for r in rows] == [2, 1, 1, 0, 2]
    assert [r["teacher"] for r in rows] == [0.5, 1.0, 0.0, None, 1.0]
    assert [r["student"] for r in rows] == [0.5, 1.0, 1.0, None, 0.5]


def test_confidence_bucket_defaults_start_at_one_over_c():
    assert behaviour.default_confidence_edges(2) == (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
    assert behaviour.default_confidence_edges(4)[:3] == (0.25, 0.3, 0.4)
    uniform = np.full((1, 4), 0.25)
    rows = behaviour.confidence_buckets([0], uniform, {"m": uniform})
    assert rows[0]["n"] == 1 and rows[0]["bucket"] == "0.25-0.30"


def test_top_disagreements_by_total_variation():
    teacher = np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8], [0.6, 0.4]])
    student = np.array([[0.1, 0.9], [0.5, 0.5], [0.6, 0.4], [0.2, 0.8]])
    # TV = 0.5 * sum|diff|: 0.8, 0.0, 0.4, 0.4 -> order 0, 2, 3 (tie: lower index), 1
    top = behaviour.top_disagreements([0, 1, 1, 0], teacher, student,
                                      ["a", "b", "c", "d"], n=3)
    assert [t["index"] for t in top] == [0, 2, 3]
    assert [t["distance"] for t in top] == pytest.approx([0.8, 0.4, 0.4])
    assert top[0] == {"index": 0, "text": "a", "label": 0, "teacher_probs": [0.9, 0.1],
                      "student_probs": [0.1, 0.9], "teacher_prediction": 0,
                      "student_prediction": 1, "distance": pytest.approx(0.8)}
    everything = behaviour.top_disagreements([0, 1, 1, 0], teacher, student,
                                             None, n=10)
    assert [t["index"] for t in everything] == [0, 2, 3, 1]
    assert everything[0]["text"] is None


def test_behaviour_report_is_json():
    report = behaviour.behaviour_report(
        LABELS, TEACHER, STUDENT, [f"text {i}" for i in range(8)],
        lengths=[3, 5, 12, 40, 8, 9, 20, 33], num_bins=5, top_n=3)
    text = json.dumps(report, allow_nan=False)
    assert set(report) >= {"agreement", "error_overlap", "by_length",
                           "by_teacher_confidence", "calibration",
                           "top_disagreements"}
    assert report["agreement"] == 0.5
    assert report["error_overlap"]["teacher_only"] == 2
    assert report["by_length"][-1]["hi"] is None  # the open "31+" bucket
    assert set(report["calibration"]) == {"teacher", "student"}
    assert len(report["top_disagreements"]) == 3
    assert json.loads(text) == report
    # NaN fractions (no student errors) are written as null
    report = behaviour.behaviour_report([0], [[0.9, 0.1]], [[0.8, 0.2]], ["x"])
    json.dumps(report, allow_nan=False)
    assert report["error_overlap"]["both_wrong_same_prediction"] is None
    assert report["by_length"] is None


@pytest.mark.parametrize("call, match", [
    (lambda: behaviour.agreement([[0.5, 0.5]], [[0.5, 0.5], [0.5, 0.5]]),
     r"same \(n, C\) shape.*\(1, 2\) and \(2, 2\)"),
    (lambda: behaviour.agreement(np.zeros((0, 2)), np.zeros((0, 2))),
     r"teacher_probs .*n >= 1.*\(0, 2\)"),
    (lambda: behaviour.agreement([0.5, 0.5], [0.5, 0.5]), r"teacher_probs.*\(2,\)"),
    (lambda: behaviour.agreement([[2.0, -1.0]], [[0.5, 0.5]]),
     r"teacher_probs must hold probabilities"),
    (lambda: behaviour.agreement([[0.5, 0.5]], [[3.0, 1.0]]),
     r"student_probs rows must sum to 1.*row 0 sums to 4"),
    (lambda: behaviour.agreement([[np.nan, 0.5]], [[0.5, 0.5]]),
     r"teacher_probs must be finite"),
    (lambda: behaviour.error_overlap([0, 2], [[0.5, 0.5]] * 2, [[0.5, 0.5]] * 2),
     r"labels must be class ids in \[0, 2\), labels\[1\] is 2"),
    (lambda: behaviour.error_overlap([0], [[0.5, 0.5]] * 2, [[0.5, 0.5]] * 2),
     r"labels must be an \(2,\) array.*\(1,\)"),
    (lambda: behaviour.calibration([0], [[0.5, 0.5]], num_bins=0), r"num_bins"),
    (lambda: behaviour.top_disagreements([0], [[0.5, 0.5]], [[0.5, 0.5]], ["a", "b"]),
     r"texts .*expected 1, got 2"),
    (lambda: behaviour.length_buckets([1, 2], [0], {"m": [[0.5, 0.5]]}),
     r"probs_by_model\['m'\] must have shape \(2, 2\), got \(1, 2\)"),
    (lambda: behaviour.confidence_buckets([0], [[0.5, 0.5]], {"m": [[0.3, 0.3, 0.4]]}),
     r"probs_by_model\['m'\] must have shape \(1, 2\)"),
    (lambda: behaviour.accuracy_by_bucket([1], {"m": [True]}, [0, 0, 1]),
     r"edges must be at least two strictly increasing"),
    (lambda: behaviour.accuracy_by_bucket([1, 2], {"m": [True]}, [0, 1]),
     r"correct_by_model\['m'\] must have shape \(2,\)"),
])
def test_bad_inputs_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_analysis_modules_import_no_tensorflow_or_matplotlib():
    code = ("import sys; import kdplug.analysis.behaviour, kdplug.analysis.probe, "
            "kdplug.analysis.plots; "
            "print(sorted(m for m in ('tensorflow', 'keras', 'matplotlib', 'sklearn') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"
