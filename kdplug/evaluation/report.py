"""Writing a run's report: `metrics.json` and `summary.md`."""

import os

from kdplug import storage

METRICS = "metrics.json"
SUMMARY = "summary.md"


def write_report(run_dir, report, summary=None):
    """Writes `metrics.json` and `summary.md` into `run_dir` (atomically).

    Args:
        run_dir: the run folder.
        report: the JSON-able report dict.
        summary: `fn(report) -> Markdown` (default `summary_markdown`, the
            single-task summary); a runner with another report shape passes
            its own.

    Returns:
        The path of `summary.md`.
    """
    storage.write_json(os.path.join(run_dir, METRICS), report)
    return storage.write_text(os.path.join(run_dir, SUMMARY),
                              (summary or summary_markdown)(report))


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
        best = (report.get("early_stopping") or {}).get(stage)
        if best:
            lines.append("  " + best_epoch_text(best))
    finetune = (report["teacher"].get("finetune") or {}).get("early_stopping")
    if finetune:
        lines.append("- **teacher fine-tuning**: " + best_epoch_text(finetune))
    lines.append("")
    return "\n".join(lines)


def best_epoch_text(best):
    """One line on early stopping (`KeepBestEpoch.summary()`)."""
    if best.get("best_epoch") is None:
        return f"early stopping on {best['monitor']}: no epoch finished"
    stopped = ("stopped early" if best["stopped_early"]
               else "ran every epoch")
    return (f"kept epoch {best['best_epoch']} of {best['epochs_run']} "
            f"({best['monitor']} {best['best_value']:.4f}, {best['mode']}; "
            f"{stopped})")
