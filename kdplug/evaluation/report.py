"""Writing a run's report: `metrics.json` and `summary.md`."""

import math
import os

from kdplug import storage
from kdplug.data.batch_mix import describe_mix
from kdplug.run_files import METRICS
from kdplug.run_files import SUMMARY


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
    split = report.get("evaluation_split", "test")
    primary = primary_metric(report)
    lines = [
        f"# {report['name']}: `{report['method']}` distillation",
        "",
        f"{split.capitalize()} split: {report['test_examples']} examples "
        f"({report['data']}). Latency: batch 1, CPU, median of "
        f"{report['latency_runs']} runs.",
        "",
    ]
    if split != "test":
        lines += [
            f"The data has no test split: every {primary} here is on the {split} "
            "split, which also chose the best epoch when early stopping was on "
            "(expect it to be optimistic).", ""]
    labels = report.get("labels")
    if labels:
        names = labels["names"]
        shown = ", ".join(f"{i} `{name}`" for i, name in enumerate(names[:20]))
        more = f", ... ({len(names)} classes)" if len(names) > 20 else ""
        lines += [f"Labels: {shown}{more} ({labels['origin']}; `label_map.json`).", ""]
    # `evaluation.metrics` beyond the primary metric: one column each
    extra = [name for name in s.get("metrics", {}) if name != primary]
    if report.get("task", "classification") != "classification":
        lines += [f"Task: {report['task']}.", ""]
    lines += [
        f"| model | {split} {primary} | "
        + "".join(f"{split} {name} | " for name in extra)
        + "parameters | batch-1 latency (ms) |",
        "|---|---|---|---|" + "---|" * len(extra),
    ]
    for role, m in (("teacher", t), ("student", s)):
        cells = "".join(f"{m['metrics'][name]:.4f} | " for name in extra)
        lines.append(f"| {role} | {m[primary]:.4f} | {cells}{m['params']:,} | "
                     f"{m['latency_ms']['median']:.1f} |")
    lines += [
        "",
        f"Student / teacher: {primary} "  # n/a: a teacher at 0 (0/0) or not finite
        f"{f'{s[primary] / t[primary]:.1%}' if 0 < abs(t[primary]) < math.inf else 'n/a'}, "
        f"parameters {s['params'] / t['params']:.1%}, speed-up "
        f"{t['latency_ms']['median'] / s['latency_ms']['median']:.2f}x.",
        "",
        "## Time",
        "",
    ]
    lines += time_lines(report)
    export = report.get("export")
    if export:
        sizes = export["size_bytes"]
        batches = sorted({b for fmt in export["latency_ms"].values() for b in fmt},
                         key=lambda b: int(b.split("_")[1]))
        lines += [
            "", "## Exported student", "",
            f"| format | size (MB) | {split} {primary} | "
            + " | ".join(f"{b.replace('_', ' ')} latency (ms)" for b in batches) + " |",
            "|---|---|---|" + "---|" * len(batches),
        ]
        for fmt, size in sizes.items():
            acc = export[primary].get(fmt)
            lat = export["latency_ms"].get(fmt, {})
            cells = [f"{lat[b]['median']:.1f}" if b in lat else "–" for b in batches]
            lines.append(
                f"| {fmt} | {size / 1e6:.1f} | "
                f"{'–' if acc is None else f'{acc:.4f}'} | " + " | ".join(cells) + " |"
            )
        lines += [f"- {note}" for note in export.get("notes", [])]
    lines += collapse_lines(report)
    lines += plot_lines(report)
    lines += ["", "## Stages", ""]
    lines += history_lines(report)
    finetune = (report["teacher"].get("finetune") or {}).get("early_stopping")
    if finetune:
        lines.append("- **teacher fine-tuning**: " + best_epoch_text(finetune))
    lines.append("")
    return "\n".join(lines)


def primary_metric(report):
    """The metric a run's report leads with: `accuracy`, or its task's
    (`pearson`, `f1_micro`; `report["primary_metric"]`)."""
    return report.get("primary_metric", "accuracy")


def resumed_parts(report):
    """`{part: why}` for the parts of `report["seconds"]` that a killed run
    had begun and this run finished, so their seconds are this run's part
    only, not their cost: stages resumed from their epoch backup
    (`report["resumed"]`, `Timers.mark_resumed`), the teacher's fine-tuning
    resumed from its cache entry's backup (`resumed_at_epoch`), teacher
    outputs whose cache kept shards a killed precompute wrote (`computed`
    and `reused` both non-empty).

    >>> resumed_parts({"teacher": {"finetune": {"resumed_at_epoch": 2}}})
    {'teacher fine-tuning': 'resumed after epoch 2'}
    """
    parts = dict(report.get("resumed") or {})
    epoch = ((report.get("teacher") or {}).get("finetune") or {}).get("resumed_at_epoch")
    if epoch:
        parts["teacher fine-tuning"] = resumed_text(epoch)
    cache = report.get("teacher_output_cache") or {}
    if cache.get("computed") and cache.get("reused"):
        shards = len(cache["computed"]) + len(cache["reused"])
        parts["teacher outputs"] = (f"{len(cache['reused'])} of {shards} shards "
                                    "written by an earlier run")
    return parts


def resumed_text(epoch):
    """How a part that went on from a killed run's epoch backup is named.

    >>> resumed_text(2)
    'resumed after epoch 2'
    """
    return f"resumed after epoch {epoch}"


def time_lines(report):
    """`- part: N s` for every part of `report["seconds"]`, a part that
    resumed an interrupted run's work (`resumed_parts`) marked as this
    run's share of it."""
    resumed = resumed_parts(report)
    return [f"- {key}: {value:.0f} s"
            + (f" ({resumed[key]}: this run's part only)" if key in resumed else "")
            for key, value in report["seconds"].items()]


def plot_lines(report):
    """`## Plots` with every plot of `report["plots"]` (none: no lines)."""
    if not report.get("plots"):
        return []
    return ["", "## Plots", ""] + [f"![{name}]({os.path.basename(path)})"
                                   for name, path in report["plots"].items()]


def history_lines(report):
    """One line per stage of `report["history"]`: epochs and final values
    (non-finite ones left out), its early-stopping epoch when it has one."""
    lines = []
    for stage, hist in report["history"].items():
        if not hist:
            lines.append(f"- **{stage}**: finished in an earlier run")
            continue
        final = ", ".join(f"{key} {values[-1]:.4f}"
                          for key, values in sorted(hist.items())
                          if values and math.isfinite(values[-1]))
        epochs = len(next(iter(hist.values()), []))
        lines.append(f"- **{stage}** ({epochs} epochs): {final}")
        best = (report.get("early_stopping") or {}).get(stage)
        if best:
            lines.append("  " + best_epoch_text(best))
        lines += ["  " + line for line in check_lines((report.get("checks") or {}).get(stage))]
    return lines


def check_lines(checks):
    """What `StageChecks` found in a stage (`StageHistory.checks`): the
    label mix of its first epoch's batches, and epochs where the student
    sat at one answer."""
    if not checks:
        return []
    lines = []
    mix = checks.get("batch_mix")
    if mix:
        warn = "**not random samples of the split**: " if mix.get("far_from_random") else ""
        lines.append(f"{warn}{describe_mix(mix)}")
    stuck = [c for c in checks.get("collapse", []) if c.get("collapsed") or c.get("plateau")]
    if stuck:
        epochs = ", ".join(str(c["epoch"]) for c in stuck)
        lines.append(f"at one answer after epoch(s) {epochs}"
                     + (" (**collapsed at the end**)" if checks.get("collapsed") else
                        ", then left it"))
    return lines


def collapse_lines(report):
    """A warning for each model whose test predictions collapsed to one
    answer (`kdplug.evaluation.collapse.collapse_check`); none otherwise."""
    lines = []
    for role in ("teacher", "student"):
        collapse = report[role].get("collapse") or {}
        if collapse.get("collapsed"):
            lines += ["", f"**Warning: the {role} has collapsed**: it {collapse['text']}. "
                          "See the log for the likely causes and what to try "
                          "(docs/results.md, \"Escaping the majority class\")."]
    return lines


def best_epoch_text(best):
    """One line on early stopping (`KeepBestEpoch.summary()`)."""
    if best.get("best_epoch") is None:
        return f"early stopping on {best['monitor']}: no epoch finished"
    stopped = ("stopped early" if best["stopped_early"]
               else "ran every epoch")
    return (f"kept epoch {best['best_epoch']} of {best['epochs_run']} "
            f"({best['monitor']} {best['best_value']:.4f}, {best['mode']}; "
            f"{stopped})")
