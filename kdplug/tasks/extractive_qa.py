import numpy as np

from kdplug.data.examples import Examples
from kdplug.errors import DataError
from kdplug.tasks.task import Task
from kdplug.tasks.task import require_per_token_student

# A window's label is (start, end, window id, length): the window id's
# column (`kdplug.terms.span_positions.WINDOW`, which needs Keras).
WINDOW = 2


class ExtractiveQATask(Task):
    """Extractive question answering (SQuAD v1.1 / v2.0): the answer is a
    span of the context, predicted as a start and an end logit on every
    word piece (`BertClassifier(per_token=True)` with 2 outputs, as BERT's
    SQuAD head).

    Rows are SQuAD JSON documents or flat rows (Hugging Face `squad`:
    question, context, answers with `text` and `answer_start` lists; the
    columns `data.text_column`, `data.text_pair_column`,
    `data.label_column`). Once the teacher's tokenizer is known
    (`prepare`), every question becomes one or more windows `[CLS] question
    [SEP] context part [SEP]` of `data.sequence_length` tokens: a long
    context is split at word boundaries into parts that overlap by
    `data.window_overlap` tokens (`kdplug.data.qa_windows`). A window's
    label is `(start, end, window id, length)`: the answer's first and last
    token, or `(0, 0)` (the [CLS] token) when the answer is not wholly in
    the window or the question has none (v2.0), as BERT's run_squad.

    The teacher is fine-tuned with the mean of the start and end
    cross-entropies (`span_cross_entropy`); soft term: soft cross-entropy
    with temperature on the start and end distributions over a window's
    positions (`SpanSoftCrossEntropy`, DistilBERT's and TinyBERT's
    prediction-layer recipe); hard term: the same cross-entropy as the
    teacher's (`SpanHardCrossEntropy`). Intermediate-layer terms are the
    same as for sentence tasks.

    Metrics (fractions, where SQuAD's script prints percent): F1 (primary)
    and exact match with the official answer normalisation, each question
    answered by the best span over all its windows (start + end logit, end
    not before start, at most `data.max_answer_length` tokens). With
    unanswerable questions in the split (v2.0), a question is answered ""
    when its "no answer" score beats its best span (threshold 0), and
    `has_answer_f1`, `no_answer_f1` and `best_f1` (at the best threshold)
    are measured too.

    Args:
        data: the run's `DataConfig` (its `window_overlap`,
            `max_answer_length`, `sequence_length`); defaults without one.

    Examples:

    ```yaml
    data:
      task: extractive_qa
      train: squad/train-v1.1.json     # or flat JSONL / Parquet / datasets rows
      dev: squad/dev-v1.1.json
      text_column: question
      text_pair_column: context
      label_column: answers
      sequence_length: 384
      window_overlap: 128
    ```
    """

    name = "extractive_qa"
    label_kind = "span"
    primary = "f1"

    def __init__(self, data=None):
        super().__init__(data)
        self.max_answer_length = getattr(data, "max_answer_length", 30)
        # Every window prepared so far, by window id (the label's column 2).
        self._questions = []       # QAExample per question
        self._window_question = []  # question index per window
        self._window_offsets = []   # (sequence_length, 2) offsets per window

    def num_outputs(self, data):
        return 2

    def head_options(self):
        return {"per_token": True}

    def check_student(self, student, kind):
        require_per_token_student(student, kind, "extractive question answering "
                                  "needs a start and an end logit per word piece")

    def objective(self):
        from kdplug.teacher.objectives import ExtractiveQAObjective

        return ExtractiveQAObjective(self)

    def soft_term(self, temperature, weight, class_mean=False, **options):
        from kdplug.terms import SpanSoftCrossEntropy

        return SpanSoftCrossEntropy(temperature, weight=weight, **options)

    def hard_term(self, weight, unlabelled=None, label_smoothing=0.0, **options):
        from kdplug.terms import SpanHardCrossEntropy

        return SpanHardCrossEntropy(weight=weight, **options)

    # ------------------------------------------------------------- windows
    def prepare(self, splits, encoder, log=None):
        """Cuts every split's questions into windows, in place: texts become
        the windows' questions, pairs their context parts (slices of the
        context text at word boundaries) and labels `(n, 4)` int32
        `(start, end, window id, length)`. The windows' token ids are
        checked against the encoder's own encoding of (question, context
        part), which every other part of the run reads."""
        for name, examples in splits.items():
            if examples is None or np.asarray(examples.labels).dtype != object:
                continue  # none, or windowed already
            windows = self.windows(list(examples.labels), encoder, examples.source)
            if log is not None:
                log.info("%s split: %d questions in %d windows of %d tokens",
                         name, len(examples), len(windows), encoder.sequence_length)
            splits[name] = windows
        return splits

    def windows(self, questions, encoder, source=""):
        """`Examples` of the windows of `questions` (`QAExample`s), their
        ids registered with this task for `metrics`."""
        from kdplug.data.qa_windows import qa_windows
        from kdplug.data.qa_windows import word_tokenizer

        import keras_hub

        tokenizer = encoder.tokenizer
        byte_level = isinstance(tokenizer, keras_hub.tokenizers.BytePairTokenizer)
        overlap = getattr(self.data, "window_overlap", None)
        if overlap is None:
            overlap = encoder.sequence_length // 4
        cut = qa_windows(questions, word_tokenizer(tokenizer, byte_level),
                         encoder.sequence_length, overlap,
                         cls_id=tokenizer.start_token_id, sep_id=tokenizer.end_token_id,
                         pad_id=tokenizer.pad_token_id, whole_words=True,
                         special_tokens=_pair_specials(encoder))
        texts, pairs = [], []
        for index, (start, end, first_word) in zip(cut.example_index, cut.context_spans):
            question = questions[index]
            texts.append(question.question)
            space = " " if byte_level and first_word > 0 else ""
            pairs.append(space + question.context[start:end])
        examples = Examples(texts, np.zeros((len(texts), 4), "int32"), pairs, source)
        encoded = encoder.encode_examples(examples, pair_inputs=False)["token_ids"]
        shift = _context_shift(encoded, cut, questions, source)
        offsets = np.full_like(cut.offsets, -1)
        for row, s in enumerate(shift):
            width = cut.offsets.shape[1] - s
            offsets[row, s:] = cut.offsets[row, :width]
        lengths = (encoded != tokenizer.pad_token_id).sum(axis=1)
        answered = cut.start_positions > 0
        first_id = len(self._window_question)
        base = len(self._questions)
        self._questions.extend(questions)
        self._window_question.extend((base + cut.example_index).tolist())
        self._window_offsets.extend(offsets)
        labels = np.stack([
            np.where(answered, cut.start_positions + shift, 0),
            np.where(answered, cut.end_positions + shift, 0),
            first_id + np.arange(len(texts)),
            lengths], axis=1).astype("int32")
        return Examples(texts, labels, pairs, source)

    def count(self, examples):
        """The questions of a windowed split (its metrics are per question)."""
        labels = np.asarray(examples.labels)
        if labels.dtype == object:
            return len(examples)
        return len({self._window_question[int(w)] for w in labels[:, WINDOW]})

    # ------------------------------------------------------------- metrics
    def answers(self, outputs, labels):
        """`{question id: SpanAnswer}`: each question's best span over the
        windows of it in `labels` (window ids registered by `windows`)."""
        from kdplug.evaluation.span_decoding import best_span
        from kdplug.evaluation.span_decoding import within_windows

        # a window's padding never competes, however it was read
        labels = np.asarray(labels)
        outputs = within_windows(outputs, labels)
        by_question = {}
        for row, window in enumerate(labels[:, WINDOW]):
            by_question.setdefault(self._window_question[int(window)], []).append(row)
        answers = {}
        for question, rows in by_question.items():
            example = self._questions[question]
            width = outputs.shape[1]
            offsets = [self._window_offsets[int(labels[r, WINDOW])][:width] for r in rows]
            answers[example.id] = best_span(
                example.context, outputs[rows, :, 0], outputs[rows, :, 1], offsets,
                max_answer_length=self.max_answer_length)
        return answers

    def metrics(self, names, outputs, labels):
        from kdplug.evaluation.squad_metrics import squad_scores

        answers = self.answers(outputs, labels)
        asked = [self._questions[self._window_question[int(w)]]
                 for w in np.asarray(labels)[:, WINDOW]]
        gold = {q.id: [text for text, _ in q.answers] for q in asked}
        predictions = {qid: answer.text for qid, answer in answers.items()}
        v2 = any(not answers_ for answers_ in gold.values())
        null = ({qid: answer.null_score - answer.score
                 for qid, answer in answers.items()} if v2 else None)
        scores = squad_scores(predictions, gold, null)
        values = {"f1": scores["f1"], "exact_match": scores["exact"],
                  "has_answer_f1": scores.get("HasAns_f1", np.nan),
                  "no_answer_f1": scores.get("NoAns_f1", np.nan),
                  "best_f1": scores.get("best_f1", scores["f1"])}
        return {name: float(values[name]) / 100.0 for name in names}


def _pair_specials(encoder):
    """The special tokens `encoder` adds around a question and a context
    (3 for BERT's `[CLS] q [SEP] c [SEP]`, 4 for RoBERTa's)."""
    probe = Examples(["a"], np.zeros((1, 4), "int32"), ["b"])  # never cut
    ids = encoder.encode_examples(probe, pair_inputs=False)["token_ids"][0]
    real = int((ids != encoder.tokenizer.pad_token_id).sum())
    pieces = sum(len(np.asarray(encoder.tokenizer(text)).reshape(-1))
                 for text in ("a", "b"))
    return real - pieces


def _context_shift(encoded, cut, questions, source):
    """Per window, how many positions later the encoder puts the context
    part than `qa_windows`' `[CLS] question [SEP]` layout (0 for BERT's
    packer; 1 where a pair is joined by two separators, as RoBERTa's);
    `DataError` when the encoder splits a window's context part into other
    pieces than word by word."""
    shift = np.zeros(len(encoded), "int32")
    for row, (ids, offsets) in enumerate(zip(cut.token_ids, cut.offsets)):
        context = np.flatnonzero(offsets[:, 0] >= 0)
        if not len(context):
            continue
        first, pieces = context[0], ids[context]
        for s in range(0, 3):
            if np.array_equal(encoded[row, first + s:first + s + len(pieces)], pieces):
                shift[row] = s
                break
        else:
            question = questions[cut.example_index[row]]
            raise DataError(
                f"{source}: question {question.id!r} ({question.row}): the teacher's "
                "tokenizer splits a context window into other word pieces as a "
                "passage than word by word, or cuts it; extractive QA needs a "
                "tokenizer that splits text at whitespace first (BERT's WordPiece, "
                "SentencePiece, byte-level BPE)")
    return shift
