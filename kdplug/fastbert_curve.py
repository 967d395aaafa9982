"""FastBERT's speed/accuracy trade-off: sweep the exit threshold `speed`.

For every `speed` the `EarlyExitBertClassifier`'s adaptive inference runs on
a dataset; the sweep records accuracy, the average number of transformer
layers executed per example, the measured throughput (examples/s, whole
dataset, after one warm-up pass) and the speed-up over the full model (its
plain `call`, every layer, measured the same way). Results go to a PNG
(matplotlib Agg canvas, no display needed) and a Markdown table.

Examples:

```python
from kdplug.fastbert_curve import fastbert_curve

result = fastbert_curve(student, test_ds, speeds=[0.0, 0.1, 0.3, 0.5, 0.8],
                        output_dir="runs/fastbert/curve")
result["rows"][2]["avg_layers"], result["full"]["examples_per_s"]
```
"""

import os
import time

import numpy as np
import tensorflow as tf
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from kdplug.models.bert_classifier import INPUT_KEYS

DEFAULT_SPEEDS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
PNG = "fastbert_curve.png"
MARKDOWN = "fastbert_curve.md"


def _batches(dataset):
    """Materialises `(features, labels)` batches as int32 tensors."""
    out = []
    for x, y in dataset:
        features = {
            k: tf.cast(x[k] if k in x else tf.zeros_like(x["token_ids"]), tf.int32)
            for k in INPUT_KEYS
        }
        out.append((features, np.asarray(y)))
    return out


def _timed(fn, batches):
    """Runs `fn` over all batches once to warm up, then once timed."""
    for x, _ in batches:
        fn(x)
    start = time.perf_counter()
    outputs = [fn(x) for x, _ in batches]
    seconds = time.perf_counter() - start
    return outputs, seconds


def fastbert_curve(model, dataset, speeds=DEFAULT_SPEEDS, output_dir=None):
    """Sweeps the exit threshold and measures accuracy, depth and speed.

    Args:
        model: an `EarlyExitBertClassifier`.
        dataset: batched `(features, labels)`; examples with label < 0 are
            left out of the accuracy.
        speeds: the thresholds to try (normalised entropy, `[0, 1]`).
        output_dir: if given, `fastbert_curve.png` and `fastbert_curve.md`
            are written there.

    Returns:
        `{"full": {...}, "rows": [...], "paths": {...}}`; `full` has
        `accuracy`, `avg_layers` (= the model depth) and `examples_per_s` of
        the full model; each row has `speed`, `accuracy`, `avg_layers`,
        `examples_per_s` and `speedup` (throughput over the full model's).
    """
    batches = _batches(dataset)
    labels = np.concatenate([y for _, y in batches])
    valid = labels >= 0
    n = len(labels)

    def accuracy(logits):
        if not valid.any():
            return float("nan")
        pred = np.argmax(logits, axis=-1)
        return float(np.mean(pred[valid] == labels[valid]))

    full_fn = tf.function(lambda x: model(x, training=False))
    outputs, seconds = _timed(full_fn, batches)
    full = {
        "accuracy": accuracy(np.concatenate([o.numpy() for o in outputs])),
        "avg_layers": float(model.num_layers),
        "examples_per_s": n / seconds,
    }
    adaptive = model.adaptive_function()
    rows = []
    for speed in speeds:
        s = tf.constant(float(speed), tf.float32)
        outputs, seconds = _timed(lambda x: adaptive(x, s), batches)
        logits = np.concatenate([o["logits"].numpy() for o in outputs])
        layers = np.concatenate([o["layers"].numpy() for o in outputs])
        rows.append({
            "speed": float(speed),
            "accuracy": accuracy(logits),
            "avg_layers": float(layers.mean()),
            "examples_per_s": n / seconds,
            "speedup": (n / seconds) / full["examples_per_s"],
        })
    result = {"full": full, "rows": rows, "paths": {}}
    if output_dir is not None:
        os.makedirs(output_dir, exist_ok=True)
        result["paths"] = {
            "png": plot_curve(result, os.path.join(output_dir, PNG)),
            "markdown": write_table(result, os.path.join(output_dir, MARKDOWN)),
        }
    return result


def markdown_table(result):
    """The sweep as a Markdown table (full model first)."""
    full = result["full"]
    lines = [
        "| speed | accuracy | avg layers | examples/s | speed-up |",
        "|---|---|---|---|---|",
        f"| full model | {full['accuracy']:.4f} | {full['avg_layers']:.2f} | "
        f"{full['examples_per_s']:.1f} | 1.00x |",
    ]
    for r in result["rows"]:
        lines.append(
            f"| {r['speed']:.2f} | {r['accuracy']:.4f} | {r['avg_layers']:.2f} | "
            f"{r['examples_per_s']:.1f} | {r['speedup']:.2f}x |"
        )
    return "\n".join(lines) + "\n"


def write_table(result, path):
    with open(path, "w", encoding="utf-8") as f:
        f.write("# FastBERT speed sweep\n\n" + markdown_table(result))
    return path


def plot_curve(result, path):
    """Two panels against `speed`: accuracy (with the full model's as a
    dashed line) and average layers executed / measured speed-up."""
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
    twin.plot(speeds, [r["speedup"] for r in rows], "s--", c="#dd8452")
    twin.set_ylabel("measured speed-up (x)", color="#dd8452")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return path
