"""Extractive QA as a task kind, by hand: windows as the run's encoder
reads them, their labels, and SQuAD F1 / exact match over every window of
a question."""

import json

import numpy as np
import pytest

from kdplug.config.sections import DataConfig
from kdplug.data.readers import read_splits
from kdplug.data.squad_examples import QAExample
from kdplug.errors import DataError
from kdplug.evaluation.collapse import collapse_check
from kdplug.tasks import get_task

keras_hub = pytest.importorskip("keras_hub")

CONTEXT = "the film was nice and the plot was dull"


@pytest.fixture(scope="module")
def encoder():
    from kdplug.data.text_encoder import TextEncoder
    from kdplug.testing import toy_vocabulary

    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=toy_vocabulary())
    return TextEncoder(tokenizer, 10)


def task(**data):
    return get_task("extractive_qa", DataConfig(path="qa.jsonl", **data))


def test_windows_labels_and_texts_by_hand(encoder):
    qa = task(window_overlap=2)
    question = QAExample("q1", "good", CONTEXT, (("nice", 13),))
    windows = qa.windows([question], encoder)
    # room = 10 - 1 - 3 = 6 context tokens; step 6 - 2 = 4 words
    assert windows.pairs == ["the film was nice and the", "and the plot was dull"]
    assert windows.texts == ["good", "good"]
    # [CLS] good [SEP] the film was nice ...: "nice" at 3 + 3 = 6; the second
    # window does not hold it: (0, 0), the [CLS] token; lengths 10 and 9
    assert windows.labels.tolist() == [[6, 6, 0, 10], [0, 0, 1, 9]]
    ids = encoder.encode_examples(windows)["token_ids"]
    assert ids[1].tolist() == [2, 5, 3, 25, 17, 20, 22, 14, 3, 0]  # and the plot was dull
    assert qa.num_outputs(None) == 2 and qa.head_options() == {"per_token": True}


def span_logits(width, start, end, high=5.0):
    logits = np.zeros((width, 2), "float32")
    logits[start, 0] = logits[end, 1] = high
    return logits


def test_metrics_take_the_best_span_over_every_window(encoder):
    qa = task(window_overlap=2)
    questions = [QAExample("q1", "good", CONTEXT, (("nice", 13),)),
                 QAExample("q2", "bad", CONTEXT, (("the plot", 22),))]
    windows = qa.windows(questions, encoder)
    assert windows.labels[:, 2].tolist() == [0, 1, 2, 3]
    outputs = np.stack([
        span_logits(10, 6, 6),            # q1, window 0: "nice" (score 10)
        span_logits(10, 5, 6, high=2.0),  # q1, window 1: "plot was" (score 4)
        span_logits(10, 3, 3, high=1.0),  # q2, window 0: "the" (score 2)
        span_logits(10, 5, 6, high=3.0),  # q2, window 1: "plot was" (score 6)
    ])
    values = qa.metrics(["f1", "exact_match"], outputs, windows.labels)
    # q1 exact; q2 "plot was" vs "the plot" -> normalised "plot was" vs "plot":
    # precision 1/2, recall 1, F1 2/3
    assert values["exact_match"] == pytest.approx(0.5)
    assert values["f1"] == pytest.approx((1.0 + 2 / 3) / 2)
    # windows in any order, and a subset, measure the questions they hold
    order = [3, 1, 0, 2]
    assert qa.metrics(["f1"], outputs[order], windows.labels[order])["f1"] == \
        pytest.approx(values["f1"])
    assert qa.metrics(["exact_match"], outputs[:2], windows.labels[:2]) == {
        "exact_match": 1.0}


def test_a_window_padding_never_competes(encoder):
    """Positions past a window's length hold what a model gives a padding
    token (or 0, read in length buckets): neither takes a start or end
    candidate's place, nor counts in the collapse check."""
    qa = task(window_overlap=2)
    questions = [QAExample("q1", "good", "the film was nice", (("nice", 13),))]
    windows = qa.windows(questions, encoder)
    assert windows.labels.tolist() == [[6, 6, 0, 8]]  # 8 tokens of 10
    clean = span_logits(10, 6, 6)[None]
    noisy = clean.copy()
    noisy[0, 8:] = 50.0  # padding "wins" every argmax
    names = ["f1", "exact_match"]
    assert qa.metrics(names, noisy, windows.labels) == qa.metrics(
        names, clean, windows.labels) == {"f1": 1.0, "exact_match": 1.0}
    labels = np.repeat(windows.labels, 40, 0)
    labels[:, 0] = np.arange(40) % 4 + 3  # gold starts spread out
    always_padding = np.repeat(noisy, 40, 0)
    assert collapse_check("span", always_padding, labels)["prediction_share"] == 1.0
    assert "token 6" in collapse_check("span", always_padding, labels)["text"]


def test_unanswerable_questions_answer_nothing_when_no_answer_wins(encoder):
    qa = task(window_overlap=2)
    questions = [QAExample("q1", "good", CONTEXT, (("nice", 13),)),
                 QAExample("q3", "poor", CONTEXT, (), True)]
    windows = qa.windows(questions, encoder)
    assert windows.labels[2:, :2].tolist() == [[0, 0], [0, 0]]
    outputs = np.stack([span_logits(10, 6, 6), span_logits(10, 6, 6, high=1.0),
                        span_logits(10, 0, 0, high=4.0),   # no answer: 8
                        span_logits(10, 5, 5, high=2.0)])  # "plot": 4, ...
    outputs[3, 0, :] = 4.0  # ... and no answer 8 (the null score is the lowest
    # over a question's windows, run_squad's rule): 8 > 4 answers ""
    values = qa.metrics(["f1", "exact_match", "has_answer_f1", "no_answer_f1",
                         "best_f1"], outputs, windows.labels)
    assert values == {"f1": 1.0, "exact_match": 1.0, "has_answer_f1": 1.0,
                      "no_answer_f1": 1.0, "best_f1": 1.0}


def test_collapse_check_reads_the_start_positions():
    labels = np.stack([np.arange(40) % 8 + 1, np.arange(40) % 8 + 1,
                       np.arange(40), np.full(40, 10)], 1)
    always_cls = np.zeros((40, 10, 2))
    always_cls[:, 0, :] = 5.0
    report = collapse_check("span", always_cls, labels)
    assert report["collapsed"] and "starts answers at token 0" in report["text"]
    right = np.zeros((40, 10, 2))
    right[np.arange(40), labels[:, 0], 0] = 5.0
    assert not collapse_check("span", right, labels)["collapsed"]


SQUAD = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{
    "context": CONTEXT,
    "qas": [{"id": "a", "question": "good", "answers": [
                {"text": "nice", "answer_start": 13}]},
            {"id": "b", "question": "poor", "answers": [], "is_impossible": True}]}]}]}


def test_squad_json_per_split_files_and_flat_rows(tmp_path):
    train = tmp_path / "train.json"
    train.write_text(json.dumps(SQUAD, indent=2))  # a document over many lines
    flat = tmp_path / "dev.jsonl"
    flat.write_text(json.dumps({"id": "c", "q": "good", "ctx": CONTEXT,
                                "ans": {"text": ["nice"], "answer_start": [13]}}) + "\n")
    cfg = DataConfig(train=str(train), dev=str(flat), task="extractive_qa",
                     text_column="q", text_pair_column="ctx", label_column="ans")
    splits = read_splits(cfg, label_kind="span")
    assert splits["train"].texts == ["good", "poor"]
    assert splits["train"].pairs == [CONTEXT, CONTEXT]
    assert [q.is_impossible for q in splits["train"].labels] == [False, True]
    assert splits["validation"].labels[0].answers == (("nice", 13),)
    assert splits["validation"].labels[0].row == "line 1"


def test_bad_rows_name_the_file_and_row(tmp_path):
    path = tmp_path / "dev.jsonl"
    rows = [{"id": "c", "question": "good", "context": CONTEXT,
             "answers": {"text": ["nice"], "answer_start": [12]}}]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    cfg = DataConfig(train=str(path), task="extractive_qa", text_column="question",
                     text_pair_column="context", label_column="answers")
    with pytest.raises(DataError, match=r"dev.jsonl: 1 answer\(s\) do not match.*line 1"):
        read_splits(cfg, label_kind="span")
    rows[0]["answers"]["answer_start"] = [13]
    path.write_text("\n".join(json.dumps(r) for r in rows * 2) + "\n")
    with pytest.raises(DataError, match="id 'c' appears twice"):
        read_splits(cfg, label_kind="span")


def test_config_needs_a_context_column_and_a_per_token_method(tmp_path):
    from kdplug.config import load_config
    from kdplug.errors import ConfigError
    from kdplug.testing.toy_config import write_toy_config
    from kdplug.testing.toy_tasks import write_toy_questions_jsonl

    data = write_toy_questions_jsonl(tmp_path / "qa.jsonl", 20)
    qa = {"path": data, "task": "extractive_qa", "text_column": "question",
          "label_column": "answers"}
    config = write_toy_config(tmp_path, {"name": "kd"}, data=qa)
    with pytest.raises(ConfigError, match="data.text_pair_column"):
        load_config(config)
    config = write_toy_config(tmp_path, {"name": "fastbert"},
                              data={**qa, "text_pair_column": "context"})
    with pytest.raises(ConfigError, match="methods for extractive_qa tasks: "
                                          "distilbert, kd, pkd, tinybert"):
        load_config(config)


@pytest.mark.parametrize("family", ["bert", "roberta", "albert", "deberta_v3"])
def test_every_tokenizer_family_puts_the_answer_where_its_encoder_does(family, tmp_path):
    """Whatever the family's pair layout ([SEP] or </s></s> between the
    question and the context) and its pieces, the label's start and end are
    the encoded answer's pieces, and decoding them gives the answer back."""
    from kdplug.data.text_encoder import TextEncoder
    from kdplug.testing import families

    encoder = TextEncoder(families.tiny_tokenizer(family, tmp_path), 24)
    qa = task(window_overlap=4)
    context = "the acting was superb and the plot was very dull"
    questions = [QAExample("q", "good", context, (("superb", 15),)),
                 QAExample("r", "bad", context, (("very dull", 39),))]
    windows = qa.windows(questions, encoder)
    ids = encoder.encode_examples(windows)["token_ids"]
    outputs = np.full((len(windows), 24, 2), -5.0, "float32")
    for row, (start, end, _, length) in enumerate(windows.labels):
        assert length == (ids[row] != encoder.tokenizer.pad_token_id).sum()
        if start:
            answer = encoder.tokenizer.detokenize(ids[row, start:end + 1])
            answer = answer if isinstance(answer, str) else answer.numpy().decode()
            assert answer.replace("▁", " ").strip() in ("superb", "very dull")
            outputs[row, start, 0] = outputs[row, end, 1] = 5.0
    answers = qa.answers(outputs, windows.labels)
    assert answers["q"].text == "superb" and answers["r"].text == "very dull"
