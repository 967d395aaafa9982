import matplotlib.image
import pytest

from kdplug.evaluation import plots

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

HISTORY = {
    "intermediate": {"loss": [1.2, 0.8, 0.5], "hidden_mse": [1.2, 0.8, 0.5]},
    "distill": {"loss": [0.9, 0.6], "soft_ce": [0.7, 0.5], "hard_ce": [0.6, 0.4],
                "accuracy": [0.6, 0.8], "val_loss": [0.95, 0.7],
                "val_accuracy": [0.55, 0.75]},
    "resumed": {},
}

REPORT = {
    "history": HISTORY,
    "teacher": {"accuracy": 0.84, "params": 22_700_000,
                "latency_ms": {"median": 40.0, "min": 38.0, "max": 45.0},
                "size_bytes": 91_000_000},
    "student": {"accuracy": 0.81, "params": 11_300_000,
                "latency_ms": {"median": 12.5, "min": 11.0, "max": 14.0},
                "size_bytes": 45_000_000},
}


def read_png(path):
    data = open(path, "rb").read()
    assert data.startswith(PNG_MAGIC)
    assert len(data) > 5_000
    return matplotlib.image.imread(path)


def test_loss_curves_one_panel_per_stage(tmp_path):
    path = plots.loss_curves(HISTORY, str(tmp_path / "sub" / "loss.png"))
    image = read_png(path)
    assert image.shape[:2] == (360, 1500)  # 3 stages x 5 in, 3.6 in, 100 dpi
    assert image[..., :3].std() > 0.05  # something is drawn


def test_teacher_vs_student_panels(tmp_path):
    image = read_png(plots.teacher_vs_student(REPORT, str(tmp_path / "tvs.png")))
    assert image.shape[:2] == (340, 4 * 320)  # accuracy, latency, params, size
    no_size = {r: {k: v for k, v in REPORT[r].items() if k != "size_bytes"}
               for r in ("teacher", "student")}
    image = read_png(plots.teacher_vs_student(no_size, str(tmp_path / "tvs3.png")))
    assert image.shape[:2] == (340, 3 * 320)


def test_write_plots_into_a_run_dir(tmp_path):
    paths = plots.write_plots(str(tmp_path), REPORT)
    assert set(paths) == {"loss_curves", "teacher_vs_student"}
    assert paths["loss_curves"] == str(tmp_path / "loss_curves.png")
    for path in paths.values():
        read_png(path)


def test_plain_number_latency_and_empty_history(tmp_path):
    report = {
        "teacher": {"accuracy": 0.8, "params": 2e6, "latency_ms": 3.0},
        "student": {"accuracy": 0.7, "params": 1e6, "latency_ms": 1.0},
    }
    paths = plots.write_plots(str(tmp_path), report)
    read_png(paths["teacher_vs_student"])
    assert read_png(paths["loss_curves"]).shape[:2] == (360, 500)
    with pytest.raises(KeyError):
        plots.teacher_vs_student({"teacher": report["teacher"]}, str(tmp_path / "x.png"))


def test_loss_curves_over_steps_draw_each_record(tmp_path, monkeypatch):
    drawn = []
    real = plots._step_curves

    def spy(ax, hist, per_step):
        result = real(ax, hist, per_step)
        drawn.append([(tuple(line.get_xdata()), tuple(line.get_ydata()), line.get_label())
                      for line in ax.get_lines()])
        return result

    monkeypatch.setattr(plots, "_step_curves", spy)
    steps = {"distill": {"step": [10, 20, 25, 35, 45, 50], "epoch": [0, 0, 0, 1, 1, 1],
                         "loss": [0.9, 0.7, 0.6, 0.5, 0.45, 0.4],
                         "accuracy": [0.5, 0.6, 0.6, 0.7, 0.7, 0.8]}}
    history = {"distill": {"loss": [0.7, 0.45], "val_loss": [0.8, 0.6]}}
    read_png(plots.loss_curves(history, str(tmp_path / "steps.png"), steps=steps))
    [lines] = drawn
    assert lines[0] == ((10, 20, 25, 35, 45, 50), (0.9, 0.7, 0.6, 0.5, 0.45, 0.4), "loss")
    # validation values at each epoch's last recorded step; accuracy left out
    assert lines[1] == ((25, 50), (0.8, 0.6), "val_loss") and len(lines) == 2
