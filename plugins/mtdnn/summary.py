"""The Markdown summary of an `mtdnn-ensemble` run (`summary.md`)."""

from kdplug.evaluation import history_lines
from kdplug.evaluation import plot_lines
from kdplug.evaluation import time_lines

VARIANT_TITLES = {
    "teacher": "teacher ensemble",
    "single_task": "single-task students",
    "multi_task": "multi-task student",
    "multi_task_kd": "multi-task student + ensemble KD",
}


def format_metrics(metrics, task_type):
    """One table cell: `0.8123` (accuracy) or `0.712 / 0.705` (Pearson /
    Spearman); `–` when absent."""
    if not metrics:
        return "–"
    if task_type == "regression":
        return f"{metrics['pearson']:.3f} / {metrics['spearman']:.3f}"
    return f"{metrics['accuracy']:.4f}"


def variant_columns(report):
    """`[(title, {task: metrics})]`: the ensembles, then every trained
    variant (single-task students gathered in one column)."""
    variants = report["variants"]
    single = {}
    for name, per_task in variants.items():
        if name.startswith("single_task-"):
            single.update(per_task)
    columns = [(VARIANT_TITLES["teacher"],
                {n: t["test_metrics"] for n, t in report["teacher"]["tasks"].items()})]
    if single:
        columns.append((VARIANT_TITLES["single_task"], single))
    for name in ("multi_task", "multi_task_kd"):
        if name in variants:
            columns.append((VARIANT_TITLES[name], variants[name]))
    return columns


def results_table(report):
    """The per-task Markdown table (tasks as rows, variants as columns)."""
    columns = variant_columns(report)
    lines = [
        "| task | metric | " + " | ".join(title for title, _ in columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    for name, task in report["tasks"].items():
        metric = ("Pearson / Spearman" if task["type"] == "regression"
                  else "accuracy")
        cells = [format_metrics(per_task.get(name), task["type"])
                 for _, per_task in columns]
        lines.append(f"| {name} | {metric} | " + " | ".join(cells) + " |")
    return lines


def tasks_table(report):
    """The tasks as a Markdown table: type, teacher, sizes, batch share."""
    lines = [
        "| task | type | teacher | train | test | batch share |",
        "|---|---|---|---|---|---|",
    ]
    for name, task in report["tasks"].items():
        lines.append(
            f"| {name} | {task['type']} | {'yes' if task['teacher'] else 'no'} | "
            f"{task['train_examples']:,} | {task['test_examples']:,} | "
            f"{task['sampling_probability']:.1%} |"
        )
    return lines


def summary_markdown(report):
    """`summary.md` of a run's report (see `MultiTaskRunner`)."""
    s = report["student"]
    k = report["ensemble_size"]
    lines = [
        f"# {report['name']}: `{report['method']}` multi-task distillation",
        "",
        f"Teachers: an ensemble of {k} fine-tuned teacher(s) per task with "
        "`teacher: true` (averaged probabilities / predictions). Students: one "
        f"shared encoder, one head per task; batches sampled "
        f"{report['sampling']['mode']}"
        + (f" (T = {report['sampling']['temperature']:g})"
           if report["sampling"]["mode"] == "temperature" else "")
        + ". Test-split metrics:",
        "",
        *results_table(report),
        "",
        *tasks_table(report),
    ]
    latency = s["latency_ms"]["median"]
    lines += [
        "",
        f"Distilled multi-task student: {s['params']:,} parameters, batch-1 CPU "
        f"latency {latency:.1f} ms (median of {report['latency_runs']} runs, all "
        "heads).",
    ]
    member = report["teacher"].get("params_per_member")
    if member:
        lines.append(f"Each teacher: {member:,} parameters.")
    lines += ["", "## Time", ""]
    lines += time_lines(report)
    for note in (report.get("export") or {}).get("notes", []):
        lines += ["", f"Note: {note}."]
    lines += plot_lines(report)
    lines += ["", "## Students", ""]
    lines += history_lines(report)
    lines.append("")
    return "\n".join(lines)
