import json
import os
import re

import pytest

from kdplug.cli import main
from kdplug.testing.toy_config import write_toy_config
from kdplug_plugins.cmlm_seq2seq.seq2seq_generator import Seq2SeqGenerator

from cmlm_helpers import write_pairs


@pytest.mark.slow
def test_kdplug_run_trains_decodes_and_exports_a_text_generator(tmp_path, capsys):
    pairs = write_pairs(tmp_path / "pairs.tsv", 120)
    path = write_toy_config(
        tmp_path,
        {"name": "cmlm-seq2seq", "max_source_length": 6, "max_target_length": 7,
         "passes": 3, "top_k": 4, "decoding": "beam", "beam_width": 2,
         "mle_baseline": True},
        data={"path": pairs, "sequence_length": 16},
        student={"kind": "seq2seq-transformer", "hidden_dim": 16,
                 "num_encoder_layers": 1, "num_decoder_layers": 1, "num_heads": 2,
                 "intermediate_dim": 32},
        training={"epochs": 1, "length_buckets": {"window": 2, "multiple": 4},
                  "verbose": 2},  # Keras' epoch lines: what each fit logs
        cache=True)
    assert main(["validate", path]) == 0
    assert main(["run", path]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "teacher accuracy" in out
    # the soft labels' extraction reports its progress (at least at its end)
    assert re.search(r"soft labels \(train\): (\d+) of \1 examples \(100%\)",
                     captured.err)
    # and so does each student's decoding of the test split
    assert len(re.findall(r"decoding \(beam\): (\d+) of \1 examples \(100%\)",
                          captured.err)) == 2
    # the C-MLM fine-tuning logs its masked-token accuracy only, not the
    # keras-hub MaskedLM's default accuracy over every position
    assert "accuracy:" in out and "sparse_categorical_accuracy" not in out
    run = tmp_path / "runs" / "toy"
    report = json.loads((run / "metrics.json").read_text())
    kd = report["variants"]["cmlm_kd"]
    assert list(report["variants"]) == ["mle", "cmlm_kd"]  # the baseline first
    assert report["student"]["variant"] == "cmlm_kd"
    assert report["student"]["accuracy"] == kd["token_accuracy"]
    assert 0.0 <= kd["bleu"] <= 100.0 and 0.0 <= kd["exact_match"] <= 1.0
    assert kd["perplexity"] > 1.0 and len(kd["samples"]) == 5
    history = report["history"]["cmlm_kd"]
    assert {"topk_soft_ce", "token_ce", "val_topk_soft_ce"} <= set(history)
    assert "topk_soft_ce" not in report["history"]["mle"]
    assert report["teacher"]["finetune"]["cached"] is False
    assert 0.0 <= report["teacher"]["accuracy"] <= 1.0
    # the teacher's accuracies, named by their masks; the seed they follow
    masked = report["teacher"]["masked_accuracy"]
    assert masked["test_random_masks"] == report["teacher"]["accuracy"]
    assert set(masked["soft_label_masks"]) == {"train", "validation"}
    recall = report["teacher"]["soft_labels"]["top_k_recall"]
    assert all(0.0 <= masked["soft_label_masks"][s] <= recall[s] <= 1.0 for s in recall)
    assert report["teacher"]["seed"] == 0
    # the copy-the-source baseline beside the students
    assert set(report["copy_source"]) == {"bleu", "exact_match"}
    assert 0.0 <= report["copy_source"]["bleu"] <= 100.0
    summary = (run / "summary.md").read_text()
    assert "BLEU" in summary and "| copy the source (no model) |" in summary
    assert (run / "student.keras").is_file() and (run / "loss_curves.png").is_file()
    # the C-MLM teacher and both splits' soft labels are in kdplug's cache
    cache = tmp_path / "kdplug-cache"
    assert len(os.listdir(cache / "teachers")) == 1
    assert len(os.listdir(cache / "outputs")) == 2
    assert report["decoding"] == {"strategy": "beam", "beam_width": 2,
                                  "length_penalty": 0.6}  # the config's default
    saved = Seq2SeqGenerator.load(str(run / "export"))
    assert (saved.decoding, saved.beam_width, saved.length_penalty) == ("beam", 2, 0.6)
    generator = Seq2SeqGenerator.load(str(run / "export"), decoding="greedy")
    out = generator.generate(["good movie", "the plot was very dull"])
    assert len(out) == 2 and all(isinstance(text, str) for text in out)
