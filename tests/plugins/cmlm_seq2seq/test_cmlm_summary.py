"""summary.md of a `cmlm-seq2seq` run: the copy-the-source row beside the
students, the teacher's accuracies named by their masks."""

from kdplug_plugins.cmlm_seq2seq.summary import results_table
from kdplug_plugins.cmlm_seq2seq.summary import teacher_accuracy_text


def variant(bleu):
    return {"bleu": bleu, "exact_match": 0.05, "token_accuracy": 0.7,
            "perplexity": 8.0, "params": 1234}


def teacher(**extra):
    return {"accuracy": 0.8854, "mask_rate": 0.15,
            "soft_labels": {"passes": 7, "top_k": 8, "temperature": 10.0,
                            "top_k_recall": {"train": 0.991, "validation": 0.982}},
            **extra}


def test_the_copy_baseline_is_a_row_beside_the_students():
    report = {"variants": {"mle": variant(39.3), "cmlm_kd": variant(20.9)},
              "copy_source": {"bleu": 70.2731, "exact_match": 0.0047}}
    lines = results_table(report)
    assert lines[2] == "| copy the source (no model) | 70.27 | 0.47% | – | – | – |"
    assert lines[3].startswith("| student, gold targets only (MLE) | 39.30 | 5.00% |")
    assert len(results_table(dict(report, copy_source=None))) == 4  # older reports


def test_teacher_accuracies_are_named_by_their_masks():
    own = {"test_random_masks": 0.8854,
           "soft_label_masks": {"train": 0.9312, "validation": 0.8901}}
    assert teacher_accuracy_text(teacher(masked_accuracy=own)) == (
        "random 15% masks on test 0.8854; the soft labels' masks (7 passes, each "
        "masking one in 7 target positions): train 0.9312, validation 0.8901 (gold "
        "among the top 8: 0.99, 0.98)")
    # an MLE-only run extracts no soft labels
    assert teacher_accuracy_text(teacher()) == "random 15% masks on test 0.8854"
