import json
import os

import keras_hub
import numpy as np
import pytest

from kdplug import testing
from kdplug.analysis.analyzer import AnalysedModel
from kdplug.analysis.analyzer import Analyzer
from kdplug.config.sections import AnalysisConfig
from kdplug.config.sections import ProbingConfig
from kdplug.data import TextEncoder
from kdplug.data.examples import Examples
from kdplug.models import BiLstmClassifier


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    """A real `Analyzer` result for an (untrained) tiny teacher, a 1-layer
    student and a BiLSTM, shaped like the benchmark's."""
    vocab = testing.toy_vocabulary()
    encoder = TextEncoder(keras_hub.tokenizers.BertTokenizer(vocabulary=vocab), 16)
    # without XLA, as a toy run's `training.jit_compile: false` analyses them
    models = [
        AnalysedModel("teacher", testing.tiny_bert_classifier(
            vocabulary_size=len(vocab), num_layers=2), encoder.dataset, "teacher",
            jit_compile=False),
        AnalysedModel("kd 3L", testing.tiny_bert_classifier(
            vocabulary_size=len(vocab), num_layers=1, seed=1), encoder.dataset,
            jit_compile=False),
        AnalysedModel("BiLSTM+aug", BiLstmClassifier(
            vocabulary_size=len(vocab), num_classes=2, embedding_dim=8, lstm_units=4,
            hidden_dim=8), encoder.dataset, jit_compile=False),
    ]
    texts, labels = testing.toy_sentences(300)
    analyzer = Analyzer(AnalysisConfig(probing=ProbingConfig(
        tasks=["sentence_length", "bigram_shift"], seeds=[0, 1], max_examples=150,
        max_iter=50)))
    tasks = analyzer.probing_tasks(texts[:240])
    out = analyzer.analyze(models[0], models[1:],
                           Examples(texts[240:], np.asarray(labels[240:])), tasks)
    folder = tmp_path_factory.mktemp("comparison")
    analyzer.write(out, str(folder), tasks)
    with open(folder / "analysis.json") as f:
        return json.load(f)


@pytest.mark.slow
def test_render_has_every_table_with_the_result_numbers(bench_script, result):
    bench = bench_script("analysis")
    section = bench.render(dict(result, bench={"seconds": 60, "machine": "2 x test"}))
    assert section.startswith("## Analysis: what the students learn")
    for title in ("### Probing: best layer per task", "### Behaviour on the test split",
                  "Accuracy by sentence length"):
        assert title in section
    # The BiLSTM's only row is its pooled state; the best-layer cell says so.
    stats = result["probing"]["results"]["BiLSTM+aug"]["bigram_shift"]["pooled"]["pooled"]
    assert f"{stats['test_accuracy']:.3f} ± {stats['test_std']:.3f} (pooled, pooled)" in section
    overlap = result["behaviour"]["kd 3L"]["error_overlap"]
    assert (f"| {overlap['both_right']} | {overlap['teacher_only']} | "
            f"{overlap['student_only']} | {overlap['both_wrong']} |") in section
    assert "img/analysis_probing_cls.png" in section
    assert "img/analysis_reliability_kd_3L.png" in section


def test_render_only_rebuilds_the_section_from_the_stored_result(bench_script, tmp_path):
    bench = bench_script("analysis")
    if not os.path.isfile(bench.RESULT):
        pytest.skip("no stored result yet: run `python bench/analysis.py`")
    out = tmp_path / "results.md"
    out.write_text("# Benchmark results\n\nBy hand.\n")
    assert bench.main(["--render-only", "--write-docs", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("# Benchmark results\n\nBy hand.")
    assert "<!-- analysis:start -->\n## Analysis: what the students learn" in text
