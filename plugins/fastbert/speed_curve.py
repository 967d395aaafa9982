"""FastBERT's speed/accuracy trade-off: sweep the exit threshold `speed`.

For every `speed` the `EarlyExitBertClassifier`'s adaptive inference runs on
a dataset; the sweep records accuracy, the average number of transformer
layers executed per example, the measured throughput (examples/s over the
whole dataset, after a warm-up that traces every batch shape) and the
speed-up over the full model (its plain `call`, every layer, measured the
same way). Throughput can be measured at several batch sizes (the dataset is
re-batched); the thresholds are timed in interleaved rounds, so machine
noise hits them alike, and the fastest round counts. Results go to a PNG
(matplotlib Agg canvas, no display needed) and a Markdown table.

Examples:

```python
from kdplug_plugins.fastbert.speed_curve import fastbert_curve

result = fastbert_curve(student, test_ds, speeds=[0.0, 0.1, 0.3, 0.5, 0.8],
                        batch_sizes=[64, 16], output_dir="runs/fastbert/curve")
result["rows"][2]["avg_layers"], result["full"]["examples_per_s"]
result["rows"][2]["throughput"]["16"]["speedup"]
```
"""

import os
import time

import numpy as np
import tensorflow as tf
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from kdplug import keys
from kdplug.evaluation import masked_accuracy
from kdplug_plugins.fastbert.fastbert_method import DEFAULT_SPEEDS

PNG = "fastbert_curve.png"
MARKDOWN = "fastbert_curve.md"


def _batches(dataset):
    """Materialises `(features, labels)` batches as int32 tensors."""
    out = []
    for x, y in dataset:
        features = {
            k: tf.cast(x[k] if k in x else tf.zeros_like(x["token_ids"]), tf.int32)
            for k in keys.TOKEN_INPUTS
        }
        out.append((features, np.asarray(y)))
    return out


def _rebatch(batches, batch_size):
    """The same examples, in order, in batches of `batch_size`."""
    features = {k: tf.concat([x[k] for x, _ in batches], 0) for k in keys.TOKEN_INPUTS}
    n = int(features["token_ids"].shape[0])
    return [({k: v[i:i + batch_size] for k, v in features.items()}, None)
            for i in range(0, n, batch_size)]


def _timed_rounds(runners, batches, rounds):
    """Warms every runner up on the first and last batch (the two batch
    shapes), then times full passes over `batches` in `rounds` interleaved
    rounds. Returns `{name: (outputs of the first pass, fastest seconds)}`."""
    for fn in runners.values():
        for x, _ in (batches[0], batches[-1]):
            fn(x)
    outputs, seconds = {}, {}
    for _ in range(max(1, int(rounds))):
        for name, fn in runners.items():
            start = time.perf_counter()
            result = [fn(x) for x, _ in batches]
            elapsed = time.perf_counter() - start
            outputs.setdefault(name, result)
            seconds[name] = min(seconds.get(name, elapsed), elapsed)
    return {name: (outputs[name], seconds[name]) for name in runners}


def fastbert_curve(model, dataset, speeds=DEFAULT_SPEEDS, output_dir=None,
                   batch_sizes=None, rounds=1):
    """Sweeps the exit threshold and measures accuracy, depth and speed.

    Args:
        model: an `EarlyExitBertClassifier`.
        dataset: batched `(features, labels)`; examples with label < 0 are
            left out of the accuracy.
        speeds: the thresholds to try (normalised entropy, `[0, 1]`).
        output_dir: if given, `fastbert_curve.png` and `fastbert_curve.md`
            are written there.
        batch_sizes: batch sizes to measure throughput at (the dataset is
            re-batched, same examples and order); None keeps the dataset's
            own batches. Accuracy and layers come from the first.
        rounds: timed passes per threshold and batch size (interleaved);
            the fastest counts.

    Returns:
        `{"full": {...}, "rows": [...], "batch_sizes": [...], "paths": {...}}`;
        `full` has `accuracy`, `avg_layers` (= the model depth) and
        `examples_per_s` of the full model; each row has `speed`,
        `accuracy`, `avg_layers`, `examples_per_s` and `speedup`
        (throughput over the full model's) at the first batch size, and
        `throughput`: `{str(batch_size): {"examples_per_s", "speedup"}}`
        for every batch size (`full` too).
    """
    batches = _batches(dataset)
    labels = np.concatenate([y for _, y in batches])
    n = len(labels)
    if batch_sizes:
        sizes = [int(b) for b in batch_sizes]
    else:
        sizes = [int(batches[0][1].shape[0])]

    def accuracy(logits):
        correct, counted = masked_accuracy(logits, labels)
        return correct / counted if counted else float("nan")

    full_fn = tf.function(lambda x: model(x, training=False))
    adaptive = model.adaptive_function()
    runners = {"full": full_fn}
    for speed in speeds:
        s = tf.constant(float(speed), tf.float32)
        runners[float(speed)] = lambda x, s=s: adaptive(x, s)
    timings = {}
    for size in sizes:
        sized = batches if not batch_sizes else _rebatch(batches, size)
        timings[size] = _timed_rounds(runners, sized, rounds)
    first = timings[sizes[0]]

    def throughput(name):
        out = {}
        for size in sizes:
            per_s = n / timings[size][name][1]
            out[str(size)] = {
                "examples_per_s": per_s,
                "speedup": per_s * timings[size]["full"][1] / n,
            }
        return out

    full_outputs = first["full"][0]
    full = {
        "accuracy": accuracy(np.concatenate([o.numpy() for o in full_outputs])),
        "avg_layers": float(model.num_layers),
        "examples_per_s": n / first["full"][1],
        "throughput": throughput("full"),
    }
    rows = []
    for speed in speeds:
        outputs = first[float(speed)][0]
        logits = np.concatenate([o["logits"].numpy() for o in outputs])
        layers = np.concatenate([o["layers"].numpy() for o in outputs])
        per_size = throughput(float(speed))
        rows.append({
            "speed": float(speed),
            "accuracy": accuracy(logits),
            "avg_layers": float(layers.mean()),
            "examples_per_s": per_size[str(sizes[0])]["examples_per_s"],
            "speedup": per_size[str(sizes[0])]["speedup"],
            "throughput": per_size,
        })
    result = {"full": full, "rows": rows, "batch_sizes": sizes, "paths": {}}
    if output_dir is not None:
        os.makedirs(output_dir, exist_ok=True)
        result["paths"] = {
            "png": plot_curve(result, os.path.join(output_dir, PNG)),
            "markdown": write_table(result, os.path.join(output_dir, MARKDOWN)),
        }
    return result


def _sizes(result):
    return [str(b) for b in result.get("batch_sizes") or []]


def markdown_table(result):
    """The sweep as a Markdown table (full model first); with several batch
    sizes, one examples/s and speed-up column pair per batch size."""
    full = result["full"]
    sizes = _sizes(result)
    if len(sizes) <= 1:
        head = "| speed | accuracy | avg layers | examples/s | speed-up |"
        columns = lambda r: [r["examples_per_s"], r.get("speedup", 1.0)]  # noqa: E731
    else:
        head = "| speed | accuracy | avg layers | " + " | ".join(
            f"examples/s (batch {b}) | speed-up (batch {b})" for b in sizes) + " |"
        columns = lambda r: [v for b in sizes for v in (  # noqa: E731
            r["throughput"][b]["examples_per_s"], r["throughput"][b]["speedup"])]
    lines = [head, "|" + "---|" * head.count(" | ") + "---|"]

    def line(label, r):
        values = columns(r)
        cells = [f"{v:.1f}" if i % 2 == 0 else f"{v:.2f}x"
                 for i, v in enumerate(values)]
        return (f"| {label} | {r['accuracy']:.4f} | {r['avg_layers']:.2f} | "
                + " | ".join(cells) + " |")

    lines.append(line("full model", full))
    lines += [line(f"{r['speed']:.2f}", r) for r in result["rows"]]
    return "\n".join(lines) + "\n"


def write_table(result, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# FastBERT speed sweep\n\n" + markdown_table(result))
    return path


def plot_curve(result, path):
    """Two panels against `speed`: accuracy (with the full model's as a
    dashed line) and average layers executed / measured speed-up (one line
    per batch size)."""
    rows = result["rows"]
    speeds = [r["speed"] for r in rows]
    fig = Figure(figsize=(9, 3.6))
    FigureCanvasAgg(fig)
    left, right = fig.subplots(1, 2)
    left.plot(speeds, [r["accuracy"] for r in rows], "o-", label="adaptive")
    left.axhline(result["full"]["accuracy"], ls="--", c="gray", label="full model")
    left.set_xlabel("speed (entropy threshold)")
    left.set_ylabel("accuracy")
    left.legend()
    right.plot(speeds, [r["avg_layers"] for r in rows], "o-", c="#4c72b0")
    right.set_xlabel("speed (entropy threshold)")
    right.set_ylabel("avg layers executed", color="#4c72b0")
    twin = right.twinx()
    sizes = _sizes(result)
    styles = ["s--", "^:", "v-.", "d--"]
    if len(sizes) <= 1:
        twin.plot(speeds, [r["speedup"] for r in rows], "s--", c="#dd8452")
    else:
        for i, b in enumerate(sizes):
            twin.plot(speeds, [r["throughput"][b]["speedup"] for r in rows],
                      styles[i % len(styles)], c="#dd8452", alpha=max(0.3, 1.0 - 0.25 * i),
                      label=f"batch {b}")
        twin.legend(loc="upper left", fontsize="small")
    twin.axhline(1.0, ls=":", c="#dd8452", lw=0.8)
    twin.set_ylabel("measured speed-up (x)", color="#dd8452")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path
