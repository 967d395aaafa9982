"""PNG plots for a run's report: loss curves and teacher vs student.

Figures are drawn with matplotlib's object API on the Agg canvas, so nothing
here needs a display or changes pyplot's global backend.

Examples:

```python
from kdplug.evaluation import plots

plots.loss_curves(report["history"], "runs/x/loss_curves.png")
plots.teacher_vs_student(report, "runs/x/teacher_vs_student.png")
plots.write_plots("runs/x", report)  # both; returns their paths
```
"""

import os

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

LOSS_CURVES = "loss_curves.png"
TEACHER_VS_STUDENT = "teacher_vs_student.png"
COLORS = {"teacher": "#4c72b0", "student": "#dd8452"}


def _is_loss(key):
    return "accuracy" not in key


def loss_curves(history, path, steps=None):
    """One panel per stage with every loss term (training solid, validation
    dashed); accuracy-like entries are left out.

    With per-step records (`steps`, what `RunHistory` keeps every
    `log_every_steps` optimizer steps) the x axis is the optimizer step and
    the training curves have one point per record, so even a one-epoch run
    shows how the losses fell; validation values (per epoch) are drawn at
    each epoch's last step. Without them, one point per epoch.

    Args:
        history: `{stage: {key: [value per epoch]}}`, e.g. `report["history"]`.
            A stage with no record at all gets an empty panel.
        path: the PNG to write.
        steps: `{stage: {"step": [...], "epoch": [...], key: [...]}}`, e.g.
            `report["step_history"]` (optional).

    Returns:
        `path`.

    Examples:

    ```python
    loss_curves({"distill": {"loss": [0.9, 0.5], "soft_ce": [0.6, 0.3]}},
                "loss_curves.png")
    loss_curves(report["history"], "loss_curves.png", report["step_history"])
    ```
    """
    steps = steps or {}
    stages = list(history) or list(steps) or ["(no stages)"]
    fig = Figure(figsize=(5.0 * len(stages), 3.6), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(stages), squeeze=False)[0]
    for ax, stage in zip(axes, stages):
        hist = history.get(stage) or {}
        per_step = steps.get(stage) or {}
        ax.set_title(stage)
        ax.set_ylabel("loss")
        if len(per_step.get("step", [])) >= 2:
            drawn = _step_curves(ax, hist, per_step)
        else:
            drawn = _epoch_curves(ax, hist)
        if not drawn:
            ax.text(0.5, 0.5, "no history recorded", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    return _save(fig, path)


def _loss_keys(values):
    return sorted(k for k in values if _is_loss(k) and not k.startswith("val_")
                  and k not in ("step", "epoch"))


def _epoch_curves(ax, hist):
    ax.set_xlabel("epoch")
    keys = _loss_keys(hist)
    for i, key in enumerate(keys):
        values = hist[key]
        ax.plot(range(1, len(values) + 1), values, marker="o", color=f"C{i % 10}",
                label=key)
        val = hist.get(f"val_{key}")
        if val:
            ax.plot(range(1, len(val) + 1), val, linestyle="--", marker="x",
                    color=f"C{i % 10}", label=f"val_{key}")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return bool(keys)


def _step_curves(ax, hist, per_step):
    ax.set_xlabel("optimizer step")
    x = per_step["step"]
    epochs = per_step.get("epoch") or [0] * len(x)
    # the last recorded step of each epoch, where its validation value goes
    epoch_end = {}
    for step, epoch in zip(x, epochs):
        epoch_end[epoch] = max(step, epoch_end.get(epoch, step))
    ends = [epoch_end[e] for e in sorted(epoch_end)]
    keys = _loss_keys(per_step)
    for i, key in enumerate(keys):
        ax.plot(x, per_step[key], color=f"C{i % 10}", label=key)
        val = hist.get(f"val_{key}")
        if val:
            n = min(len(val), len(ends))
            ax.plot(ends[:n], val[:n], linestyle="--", marker="x",
                    color=f"C{i % 10}", label=f"val_{key}")
    return bool(keys)


def teacher_vs_student(report, path):
    """Bar charts of teacher vs student: test accuracy, batch-1 latency (ms),
    parameters (millions) and, when given, file size (MB).

    Args:
        report: a dict with `"teacher"` and `"student"` entries, each with
            `accuracy`, `latency_ms` (`{"median": ...}` or a number) and
            `params`; an optional `size_bytes` per model adds a size panel.
        path: the PNG to write.

    Returns:
        `path`.

    Examples:

    ```python
    teacher_vs_student(
        {"teacher": {"accuracy": 0.84, "latency_ms": {"median": 40.0},
                     "params": 22_700_000},
         "student": {"accuracy": 0.82, "latency_ms": {"median": 12.0},
                     "params": 11_000_000}},
        "teacher_vs_student.png")
    ```
    """
    roles = ("teacher", "student")
    primary = report.get("primary_metric", "accuracy")
    panels = [
        (f"{report.get('evaluation_split', 'test')} {primary}", lambda m: m[primary],
         "{:.3f}"),
        ("batch-1 latency (ms)", lambda m: _median(m["latency_ms"]), "{:.1f}"),
        ("parameters (M)", lambda m: m["params"] / 1e6, "{:.2f}"),
    ]
    if all(report[r].get("size_bytes") for r in roles):
        panels.append(("size (MB)", lambda m: m["size_bytes"] / 2**20, "{:.1f}"))
    fig = Figure(figsize=(3.2 * len(panels), 3.4), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(1, len(panels), squeeze=False)[0]
    for ax, (title, value, fmt) in zip(axes, panels):
        values = [float(value(report[r])) for r in roles]
        bars = ax.bar(roles, values, color=[COLORS[r] for r in roles])
        ax.bar_label(bars, labels=[fmt.format(v) for v in values])
        ax.set_title(title)
        ax.margins(y=0.15)
    return _save(fig, path)


def write_plots(run_dir, report):
    """Writes `loss_curves.png` and `teacher_vs_student.png` into `run_dir`
    from a run's report; returns `{name: path}`."""
    return {
        "loss_curves": loss_curves(
            report.get("history", {}), os.path.join(run_dir, LOSS_CURVES),
            steps=report.get("step_history")),
        "teacher_vs_student": teacher_vs_student(
            report, os.path.join(run_dir, TEACHER_VS_STUDENT)),
    }


def _median(latency):
    return latency["median"] if isinstance(latency, dict) else latency


def _save(fig, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=100)
    return path
