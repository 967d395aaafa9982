"""The Markdown summary of a `cmlm-seq2seq` run (`summary.md`)."""

from kdplug.evaluation import history_lines
from kdplug.evaluation import plot_lines
from kdplug.evaluation import time_lines

TITLES = {"mle": "student, gold targets only (MLE)",
          "cmlm_kd": "student + C-MLM distillation"}
COPY_TITLE = "copy the source (no model)"


def results_table(report):
    """The copy-the-source baseline (BLEU and exact match only: no model),
    then one row per student variant: BLEU, exact match, token accuracy,
    perplexity, parameters."""
    lines = ["| model | BLEU | exact match | token accuracy | perplexity | parameters |",
             "|---|---|---|---|---|---|"]
    copy = report.get("copy_source")
    if copy:
        lines.append(f"| {COPY_TITLE} | {copy['bleu']:.2f} | {copy['exact_match']:.2%} "
                     "| – | – | – |")
    for name, r in report["variants"].items():
        lines.append(
            f"| {TITLES.get(name, name)} | {r['bleu']:.2f} | {r['exact_match']:.2%} | "
            f"{r['token_accuracy']:.4f} | {r['perplexity']:.2f} | {r['params']:,} |")
    return lines


def samples(report):
    """The first test examples with every variant's output."""
    variants = report["variants"]
    first = next(iter(variants.values()))["samples"]
    lines = []
    for i, sample in enumerate(first):
        lines += [f"{i + 1}. source: `{sample['source']}`",
                  f"   - reference: `{sample['reference']}`"]
        for name, r in variants.items():
            lines.append(f"   - {name}: `{r['samples'][i]['generated']}`")
    return lines


def teacher_accuracy_text(teacher):
    """The C-MLM teacher's masked-token accuracies, named by their masks:
    random `mask_rate` masks on test, and the soft labels' own masks on the
    splits they come from (with the share of gold word pieces among the
    top K; absent from a run without soft labels).

    Args:
        teacher: a report's `teacher` section (`CmlmSeq2SeqRunner`).

    Examples:

    ```python
    teacher_accuracy_text(report["teacher"])
    # random 15% masks on test 0.8854; the soft labels' masks (7 passes, each
    # masking one in 7 target positions): train 0.9312, validation 0.8901
    # (gold among the top 8: 0.99, 0.98)
    ```
    """
    soft = teacher["soft_labels"]
    text = f"random {teacher['mask_rate']:.0%} masks on test {teacher['accuracy']:.4f}"
    own = (teacher.get("masked_accuracy") or {}).get("soft_label_masks") or {}
    if own:
        recall = soft.get("top_k_recall") or {}
        values = ", ".join(f"{split} {value:.4f}" for split, value in own.items())
        recalls = ", ".join(f"{recall[split]:.2f}" for split in own if split in recall)
        text += (f"; the soft labels' masks ({soft['passes']} passes, each masking one "
                 f"in {soft['passes']} target positions): {values} (gold among the top "
                 f"{soft['top_k']}: {recalls})")
    return text


def summary_markdown(report):
    """`summary.md` of a run's report (see `CmlmSeq2SeqRunner`)."""
    t, task, d = report["teacher"], report["task"], report["decoding"]
    soft = t["soft_labels"]
    decoding = ("greedy decoding" if d["strategy"] == "greedy"
                else f"beam search, {d['beam_width']} beams")
    lines = [
        f"# {report['name']}: `{report['method']}` sequence-to-sequence distillation",
        "",
        f"Data: {report['data']} ({task['train_examples']:,} train, "
        f"{task['validation_examples']:,} validation, {task['test_examples']:,} test "
        f"pairs; `{task['source_column']}` -> `{task['target_column']}`).",
        "",
        f"Teacher: C-MLM fine-tuned BERT ({t['params']:,} parameters), masking "
        f"{t['mask_rate']:.0%} of the target; masked-token accuracy: "
        f"{teacher_accuracy_text(t)}. Soft labels: top {soft['top_k']}, {soft['passes']} "
        f"passes per example, temperature {soft['temperature']:g}"
        + (" (student tempered too, x T^2)" if soft["temper_student"] else "")
        + f"; alpha {report['alpha']:g}.",
        "",
        f"Test split, {decoding}; BLEU is corpus BLEU (SacreBLEU's 13a "
        "tokenisation) against the references as the tokenizer writes them; "
        "copying the source is the baseline a student must beat:",
        "",
        *results_table(report),
        "",
        "## Examples",
        "",
        *samples(report),
        "",
        "## Time",
        "",
    ]
    lines += time_lines(report)
    export = report.get("export")
    if export:
        lines += ["", "## Export", "", f"`{export['path']}`: "
                  + ", ".join(export["files"]) + "."]
        lines += [f"Note: {note}." for note in export.get("notes", [])]
    lines += plot_lines(report)
    lines += ["", "## Students", ""]
    lines += history_lines(report)
    lines.append("")
    return "\n".join(lines)
