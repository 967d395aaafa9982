"""Measuring models and writing a run's report."""

import json
import os
import statistics
import time

import numpy as np
import tensorflow as tf


def count_params(model):
    """Parameters of a model (random-seed state excluded)."""
    return int(
        sum(np.prod(w.shape) for w in model.weights if "seed_generator" not in w.path)
    )


def accuracy(model, dataset):
    """Top-1 accuracy of a logits model on a `(features, labels)` dataset."""
    correct = total = 0
    predict = tf.function(lambda x: model(x, training=False), jit_compile=True,
                          reduce_retracing=True)
    for x, y in dataset:
        pred = np.argmax(predict(x).numpy(), axis=-1)
        y = y.numpy()
        keep = y >= 0
        correct += int((pred[keep] == y[keep]).sum())
        total += int(keep.sum())
    return correct / max(total, 1)


def latency_ms(model, features, runs=30, warmup=5):
    """Median / min / max wall time of one forward pass, in milliseconds.

    Args:
        model: a Keras model.
        features: one input batch (its batch size is what is measured).
    """
    forward = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    for _ in range(warmup):
        forward(features).numpy()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        forward(features).numpy()
        times.append((time.perf_counter() - start) * 1000)
    return {
        "median": statistics.median(times),
        "min": min(times),
        "max": max(times),
    }


def first_examples(dataset, n):
    """The first `n` examples' features of a batched dataset."""
    x, _ = next(iter(dataset.unbatch().batch(n)))
    return x


def write_report(run_dir, report):
    """Writes `metrics.json` and `summary.md` into `run_dir`."""
    with open(os.path.join(run_dir, "metrics.json"), "w") as f:
        json.dump(report, f, indent=2, default=float)
    with open(os.path.join(run_dir, "summary.md"), "w") as f:
        f.write(summary_markdown(report))


def summary_markdown(report):
    t, s = report["teacher"], report["student"]
    lines = [
        f"# {report['name']}: `{report['method']}` distillation",
        "",
        f"Test split: {report['test_examples']} examples "
        f"({report['data']}). Latency: batch 1, CPU, median of "
        f"{report['latency_runs']} runs.",
        "",
        "| model | test accuracy | parameters | batch-1 latency (ms) |",
        "|---|---|---|---|",
        f"| teacher | {t['accuracy']:.4f} | {t['params']:,} | "
        f"{t['latency_ms']['median']:.1f} |",
        f"| student | {s['accuracy']:.4f} | {s['params']:,} | "
        f"{s['latency_ms']['median']:.1f} |",
        "",
        f"Student / teacher: accuracy {s['accuracy'] / max(t['accuracy'], 1e-9):.1%}, "
        f"parameters {s['params'] / t['params']:.1%}, speed-up "
        f"{t['latency_ms']['median'] / s['latency_ms']['median']:.2f}x.",
        "",
        "## Time",
        "",
    ]
    for key, value in report["seconds"].items():
        lines.append(f"- {key}: {value:.0f} s")
    export = report.get("export")
    if export:
        sizes = export["size_bytes"]
        batches = sorted({b for fmt in export["latency_ms"].values() for b in fmt},
                         key=lambda b: int(b.split("_")[1]))
        lines += [
            "", "## Exported student", "",
            "| format | size (MB) | test accuracy | "
            + " | ".join(f"{b.replace('_', ' ')} latency (ms)" for b in batches) + " |",
            "|---|---|---|" + "---|" * len(batches),
        ]
        for fmt, size in sizes.items():
            acc = export["accuracy"].get(fmt)
            lat = export["latency_ms"].get(fmt, {})
            cells = [f"{lat[b]['median']:.1f}" if b in lat else "–" for b in batches]
            lines.append(
                f"| {fmt} | {size / 1e6:.1f} | "
                f"{'–' if acc is None else f'{acc:.4f}'} | " + " | ".join(cells) + " |"
            )
        lines += [f"- {note}" for note in export.get("notes", [])]
    if report.get("plots"):
        lines += ["", "## Plots", ""]
        lines += [f"![{name}]({os.path.basename(path)})"
                  for name, path in report["plots"].items()]
    lines += ["", "## Stages", ""]
    for stage, hist in report["history"].items():
        final = ", ".join(f"{k} {v[-1]:.4f}" for k, v in sorted(hist.items()))
        lines.append(f"- **{stage}** ({len(next(iter(hist.values()), []))} epochs): {final}")
    lines.append("")
    return "\n".join(lines)
