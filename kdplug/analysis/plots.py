"""PNG plots of the analysis: reliability diagrams and probing heat maps.

As in `kdplug.evaluation.plots`, figures are drawn with matplotlib's object
API on the Agg canvas, so nothing here needs a display or changes pyplot's
global backend; matplotlib itself is imported on the first plot, so that
importing this module stays cheap.

Examples:

```python
from kdplug.analysis import plots

plots.reliability_diagram(report["calibration"], "runs/x/reliability.png")
plots.probing_heatmap(
    {"teacher": {"SentLen": {"layer_1": 0.62, "layer_2": 0.71}},
     "student": {"SentLen": {"layer_1": 0.58}}},
    "runs/x/probing.png")
```
"""

import math
import os

import numpy as np

COLORS = {"teacher": "#4c72b0", "student": "#dd8452"}
DPI = 120


def _figure(width, height):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _color(name, i):
    return COLORS.get(name, f"C{(i + 2) % 10}")


def reliability_diagram(calibrations, path, title=None):
    """Reliability diagrams (Guo et al. 2017), one panel per model.

    Top: for each confidence bin, a bar up to the bin's accuracy, a black dot
    at its mean confidence, and the diagonal (perfect calibration: accuracy
    equals confidence); bars below the diagonal mean overconfidence. The
    legend gives the model's ECE. Bottom: the share of examples in each bin.
    Empty bins have no bar and no dot.

    Args:
        calibrations: `{model name: calibration(...) dict}`, e.g.
            `report["calibration"]` of `behaviour_report` (`"bins"` with
            `lo`, `hi`, `n`, `accuracy`, `confidence`, and `"ece"`).
        path: the PNG to write.
        title: a title over the panels (optional).

    Returns:
        `path`.

    Examples:

    ```python
    reliability_diagram({"teacher": calibration(y, t_probs),
                         "student": calibration(y, s_probs)}, "reliability.png")
    ```
    """
    if not isinstance(calibrations, dict) or not calibrations:
        raise ValueError("calibrations must be a non-empty dict "
                         "{model name: calibration(...) dict}")
    names = list(calibrations)
    fig = _figure(3.6 * len(names), 4.4)
    axes = fig.subplots(2, len(names), squeeze=False,
                        gridspec_kw={"height_ratios": [3, 1]})
    for i, name in enumerate(names):
        cal = calibrations[name]
        bins = cal.get("bins") or []
        top, bottom = axes[0][i], axes[1][i]
        total = sum(b["n"] for b in bins) or 1
        full = [b for b in bins if b["n"] and b.get("accuracy") is not None]
        ece = cal.get("ece")
        label = "accuracy" if ece is None else f"accuracy (ECE {ece:.3f})"
        top.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1,
                 label="perfect calibration")
        if full:
            top.bar([b["lo"] for b in full], [b["accuracy"] for b in full],
                    width=[b["hi"] - b["lo"] for b in full], align="edge",
                    color=_color(name, i), edgecolor="black", linewidth=0.5,
                    alpha=0.85, label=label)
            top.scatter([b["confidence"] for b in full], [b["accuracy"] for b in full],
                        s=12, color="black", zorder=3, label="bin mean confidence")
        else:
            top.text(0.5, 0.5, "no examples", ha="center", va="center",
                     transform=top.transAxes)
        top.set_xlim(0, 1)
        top.set_ylim(0, 1)
        top.set_title(name)
        top.set_ylabel("accuracy")
        top.tick_params(labelbottom=False)
        top.grid(alpha=0.3)
        top.legend(fontsize="x-small", loc="upper left")
        if bins:
            bottom.bar([b["lo"] for b in bins], [b["n"] / total for b in bins],
                       width=[b["hi"] - b["lo"] for b in bins], align="edge",
                       color="grey", edgecolor="black", linewidth=0.5)
        bottom.set_xlim(0, 1)
        bottom.set_xlabel("confidence (max probability)")
        bottom.set_ylabel("share")
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def _layers(tasks):
    """Every layer named by any task, in order of first appearance."""
    order = {}
    for accuracies in tasks.values():
        for layer in accuracies:
            order.setdefault(layer, None)
    return list(order)


def probing_heatmap(table, path, title=None):
    """Probing accuracies as heat maps, one per model, side by side.

    Rows are the model's layers in the order given, the first (lowest) layer
    at the **bottom**, so depth grows upwards; columns are the probing tasks.
    Each cell shows its accuracy with two decimals; a layer a task was not
    probed on is left blank. All panels share one colour scale, from the
    lowest to the highest accuracy in the whole table, so colours compare
    across models. Models may have different layers (a 6-layer teacher, a
    3-layer student, a BiLSTM's single `pooled` layer).

    Args:
        table: `{model name: {task name: {layer name: accuracy}}}`.
        path: the PNG to write.
        title: a title over the panels (optional).

    Returns:
        `path`.

    Examples:

    ```python
    probing_heatmap({"teacher": {"SentLen": {"layer_1": 0.6, "layer_2": 0.7},
                                 "BShift": {"layer_1": 0.5, "layer_2": 0.8}},
                     "bilstm": {"SentLen": {"pooled": 0.55},
                                "BShift": {"pooled": 0.51}}},
                    "probing.png")
    ```
    """
    if not isinstance(table, dict) or not table:
        raise ValueError("table must be a non-empty dict "
                         "{model name: {task name: {layer name: accuracy}}}")
    grids = {}
    for model, tasks in table.items():
        tasks = tasks or {}
        layers = _layers(tasks)
        grid = np.full((len(layers), len(tasks)), np.nan)
        for j, accuracies in enumerate(tasks.values()):
            for layer, value in accuracies.items():
                if value is not None and math.isfinite(float(value)):
                    grid[layers.index(layer), j] = float(value)
        grids[model] = (list(tasks), layers, grid)
    values = np.concatenate([g.ravel() for _, _, g in grids.values()])
    values = values[np.isfinite(values)]
    low, high = (float(values.min()), float(values.max())) if values.size else (0, 1)
    if high - low < 1e-6:
        low, high = low - 0.05, high + 0.05

    max_layers = max([len(layers) for _, layers, _ in grids.values()] + [1])
    widths = [max(len(tasks), 1) * 0.75 + 1.4 for tasks, _, _ in grids.values()]
    fig = _figure(sum(widths) + 1.0, 0.45 * max_layers + 2.3)
    axes = fig.subplots(1, len(grids), squeeze=False,
                        gridspec_kw={"width_ratios": widths})[0]
    image = None
    for ax, (model, (tasks, layers, grid)) in zip(axes, grids.items()):
        ax.set_title(model)
        if not grid.size:
            ax.text(0.5, 0.5, "no probing results", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_xticks([])
            ax.set_yticks([])
            continue
        image = ax.imshow(np.ma.masked_invalid(grid), origin="lower", aspect="auto",
                          cmap="viridis", vmin=low, vmax=high)
        ax.set_xticks(range(len(tasks)), tasks, rotation=30, ha="right")
        ax.set_yticks(range(len(layers)), layers)
        ax.set_xlabel("probing task")
        ax.set_ylabel("layer (lowest at bottom)")
        for r in range(grid.shape[0]):
            for c in range(grid.shape[1]):
                value = grid[r, c]
                if not np.isfinite(value):
                    continue
                dark = (value - low) / (high - low) < 0.6
                ax.text(c, r, f"{value:.2f}", ha="center", va="center",
                        fontsize="small", color="white" if dark else "black")
    if image is not None:
        fig.colorbar(image, ax=list(axes), label="probe test accuracy", shrink=0.9)
    if title:
        fig.suptitle(title)
    return _save(fig, path)


def _save(fig, path):
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=DPI)
    fig.clear()  # an object-API figure is not registered with pyplot; drop its artists
    return path
