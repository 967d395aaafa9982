"""`analysis.md`: the analysis result as Markdown tables (docs/analysis.md
explains every table)."""

POOLING_NAMES = {"cls": "[CLS]", "mean": "mean", "pooled": "pooled"}


def analysis_markdown(result, title="Analysis"):
    """The Markdown report of an `Analyzer.analyze` result (with its
    `plots`, as `Analyzer.write` adds them).

    Examples:

    ```python
    text = analysis_markdown(result, "quickstart: teacher vs student")
    ```
    """
    lines = [f"# {title}", "", "| model | role | class | parameters |",
             "|---|---|---|---|"]
    lines += [f"| {m['name']} | {m['role']} | {m['class']} | {m['params']:,} |"
              for m in result["models"]]
    if result.get("warnings"):
        lines += ["", "## Warnings", ""]
        lines += [f"- {warning}" for warning in result["warnings"]]
    if result.get("probing"):
        lines += _probing(result["probing"], result["config"]["probing"])
    if result.get("behaviour"):
        teacher = result["models"][0]["name"]
        for student, report in result["behaviour"].items():
            lines += _behaviour(teacher, student, report)
    if result.get("plots"):
        lines += ["", "## Plots", ""]
        lines += [f"![{name}]({path})" for name, path in result["plots"].items()]
    lines.append("")
    return "\n".join(lines)


def _cell(stats):
    if stats is None:
        return "–"
    std = stats.get("test_std") or 0.0
    return f"{stats['test_accuracy']:.3f} ± {std:.3f}" if std else f"{stats['test_accuracy']:.3f}"


def _probing(probing, config):
    seeds = config["seeds"]
    lines = [
        "", "## Probing", "",
        f"Probe: {config['probe']} (max_iter {config['max_iter']}), seeds "
        f"{', '.join(map(str, seeds))}: test accuracy, mean ± sample standard "
        "deviation over seeds. Sentence vectors: "
        + ", ".join(POOLING_NAMES[p] for p in config["poolings"])
        + " for transformer layers; a BiLSTM's pooled state.",
        "", "### Probing sets", "",
        "| task | classes | train / dev / test | majority baseline | labels | source |",
        "|---|---|---|---|---|---|",
    ]
    for task in probing["tasks"]:
        sizes = task["sizes"]
        lines.append(
            f"| {task['name']} | {len(task['label_names'])} | {sizes.get('train', 0)} / "
            f"{sizes.get('dev', 0)} / {sizes.get('test', 0)} | "
            f"{task['majority_baseline']:.3f} | {'silver (parser)' if task['silver'] else 'gold'}"
            f" | {task['source']} |")
    results = probing["results"]
    names = [t["name"] for t in probing["tasks"]]
    lines += ["", "### Best layer per task", "",
              "The highest mean test accuracy over layers and sentence vectors "
              "(layer, vector).", "",
              "| task | " + " | ".join(results) + " |",
              "|---|" + "---|" * len(results)]
    for task in names:
        cells = []
        for per_model in results.values():
            best = max(((stats["test_accuracy"], layer, pooling)
                        for layer, by_pooling in per_model[task].items()
                        for pooling, stats in by_pooling.items()), default=None)
            cells.append("–" if best is None else
                         f"{best[0]:.3f} ({best[1]}, {POOLING_NAMES[best[2]]})")
        lines.append(f"| {task} | " + " | ".join(cells) + " |")
    for model, per_model in results.items():
        layers = list(dict.fromkeys(layer for task in names for layer in per_model[task]))
        poolings = list(dict.fromkeys(p for task in names for layer in per_model[task]
                                      for p in per_model[task][layer]))
        lines += ["", f"### {model}: every layer", "",
                  "| layer | vector | " + " | ".join(names) + " |",
                  "|---|---|" + "---|" * len(names)]
        for layer in layers:
            for pooling in poolings:
                cells = [_cell(per_model[task].get(layer, {}).get(pooling)) for task in names]
                lines.append(f"| {layer} | {POOLING_NAMES[pooling]} | "
                             + " | ".join(cells) + " |")
    return lines


def _pct(x):
    return "–" if x is None else f"{x:.3f}"


def _behaviour(teacher, student, report):
    overlap = report["error_overlap"]
    lines = [
        "", f"## Behaviour: {teacher} vs {student}", "",
        f"{overlap['n']} examples. Agreement (same predicted class): "
        f"{report['agreement']:.3f}. Accuracy: {teacher} {overlap['teacher_accuracy']:.3f}, "
        f"{student} {overlap['student_accuracy']:.3f}.", "",
        f"| | {student} right | {student} wrong |", "|---|---|---|",
        f"| **{teacher} right** | {overlap['both_right']} | {overlap['teacher_only']} |",
        f"| **{teacher} wrong** | {overlap['student_only']} | {overlap['both_wrong']} |",
        "",
        f"Of the student's errors, {_pct(overlap['student_errors_teacher_also_makes'])} "
        "are also the teacher's; where both are wrong they predict the same class in "
        f"{_pct(overlap['both_wrong_same_prediction'])} of the cases.",
    ]
    for key, title in (("by_length", "Accuracy by sentence length (words)"),
                       ("by_teacher_confidence",
                        "Accuracy by the teacher's confidence (its top probability)")):
        rows = report.get(key) or []
        lines += ["", f"### {title}", "", f"| bucket | n | {teacher} | {student} |",
                  "|---|---|---|---|"]
        lines += [f"| {row['bucket']} | {row['n']} | {_pct(row.get('teacher'))} | "
                  f"{_pct(row.get('student'))} |" for row in rows]
    lines += ["", "### Calibration", "",
              "| model | accuracy | mean confidence | ECE | MCE | Brier | NLL |",
              "|---|---|---|---|---|---|---|"]
    for role, name in (("teacher", teacher), ("student", student)):
        c = report["calibration"][role]
        lines.append(f"| {name} | {_pct(c['accuracy'])} | {_pct(c['mean_confidence'])} | "
                     f"{_pct(c['ece'])} | {_pct(c['mce'])} | {_pct(c['brier'])} | "
                     f"{_pct(c['nll'])} |")
    top = report.get("top_disagreements") or []
    names = report.get("label_names")
    if top:
        lines += ["", "### Where they disagree most", "",
                  "Ranked by total variation distance between the two predicted "
                  "distributions.", "",
                  f"| text | gold | {teacher} probabilities | {student} probabilities |",
                  "|---|---|---|---|"]
        for row in top:
            text = row["text"].replace("|", "\\|")
            text = text if len(text) <= 140 else text[:137] + "..."
            gold = str(names[row["label"]] if names else row["label"]).replace("|", "\\|")
            lines.append(
                f"| {text} | {gold} | "
                f"{', '.join(f'{p:.2f}' for p in row['teacher_probs'])} | "
                f"{', '.join(f'{p:.2f}' for p in row['student_probs'])} |")
    return lines
