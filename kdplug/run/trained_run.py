"""`TrainedRun`: a finished run folder, opened to predict, evaluate and
export (`kdplug predict`, `kdplug evaluate`, `kdplug export`)."""

import os

import numpy as np

from kdplug import storage
from kdplug.data.examples import Examples
from kdplug.errors import KdplugError
from kdplug.finished_run import check_finished
from kdplug.finished_run import read_run_config
from kdplug.finished_run import student_file
from kdplug.run.teacher_setup import EVAL_BATCH_SIZE
from kdplug.run_files import LABEL_MAP

ROLES = ("student", "teacher")


class TrainedRun:
    """The trained models of a finished single-task run, with the run's
    own encoding and class names: what `kdplug predict`, `kdplug
    evaluate` and `kdplug export` read.

    Opening a run only reads its config and checks the folder (cheap); the
    models are reloaded on first use, as `kdplug.analysis.load_run`
    reloads them (the student from `student.keras`, else
    `export/student.keras`; the fine-tuned teacher from kdplug's teacher
    cache, only when `roles` names it). Texts are encoded as the run
    encoded them (the teacher's tokenizer at `data.sequence_length`, and
    the run's `word_vocabulary.json` for a word-id student such as a
    BiLSTM).

    Args:
        run_dir: the run folder.
        roles: the models wanted, `("student",)`, `("teacher",)` or both.

    Raises:
        KdplugError: the folder is missing or not a finished run (naming
            the missing file), the run's method has its own runner (a
            multi-task or sequence-to-sequence run), or the teacher is
            wanted and was not fine-tuned (or, on first use, is not in the
            cache).

    Examples:

    ```python
    run = TrainedRun("runs/quickstart")
    run.predict(["a fine film"])
    # [{"text": "a fine film", "label": "pos",
    #   "probabilities": {"neg": 0.08, "pos": 0.92}}]
    run.label_names  # ["neg", "pos"], or None (class ids)
    examples = run.read_labelled("data/test.tsv")
    TrainedRun("runs/quickstart", roles=ROLES).evaluate(examples)
    # {"student": {"accuracy": 0.84}, "teacher": {"accuracy": 0.86}}
    ```
    """

    def __init__(self, run_dir, roles=("student",)):
        from kdplug.tasks import get_task

        unknown = [role for role in roles if role not in ROLES]
        if unknown:
            raise ValueError(f"roles must be among {ROLES}, got {unknown}")
        check_finished(run_dir)  # the message names the folder as given
        self.run_dir = os.path.abspath(run_dir)
        self.roles = tuple(roles)
        self.config = read_run_config(self.run_dir)
        self.task = get_task(self.config.task, self.config.data)
        self._check_single_task()
        if "teacher" in self.roles:
            self._check_teacher()
        self._models = None

    @property
    def name(self):
        return self.config.name

    @property
    def models(self):
        """The reloaded `kdplug.analysis.run_models.RunModels` (loaded on
        first use: the student, the teacher when `roles` names it, the
        encoders)."""
        if self._models is None:
            from kdplug.analysis.run_models import load_run

            self._models = load_run(self.run_dir, config=self.config, read_data=False,
                                    with_teacher="teacher" in self.roles)
        return self._models

    @property
    def student_file(self):
        """The student's `.keras` file (`student.keras`, else
        `export/student.keras`)."""
        return student_file(self.run_dir)

    @property
    def label_names(self):
        """The class names in id order (`label_map.json`, else
        `data.label_names`), or None when the run's classes are ids (and
        for a regression run)."""
        saved = storage.read_json(os.path.join(self.run_dir, LABEL_MAP)) or {}
        return saved.get("names") or self.config.data.label_names or None

    def label(self, class_id):
        """A class's name, or its id when the run has no names."""
        names = self.label_names
        return names[int(class_id)] if names else int(class_id)

    def model(self, role):
        """The `student` or `teacher` Keras model."""
        if role not in self.roles:
            raise ValueError(f"{role!r} was not loaded (roles {self.roles})")
        return self.models.student if role == "student" else self.models.teacher

    def examples(self, texts, pairs=None):
        """`Examples` of texts (and second texts) without labels."""
        return Examples(list(texts), np.zeros(len(texts), "int32"),
                        None if pairs is None else list(pairs), source="input")

    def dataset(self, examples, batch_size=None, roles=None):
        """Batched `(features, labels)` of `examples`, with every input the
        models in `roles` read (default: the run's loaded roles; word ids
        or the student tokenizer's ids too, for a student with its own
        encoding). Default batch: the run's evaluation batch
        (`max(training.batch_size, 64)`)."""
        return self.models.dataset(examples, self._batch_size(batch_size),
                                   roles=tuple(roles or self.roles))

    def outputs(self, role, dataset, jit_compile=False):
        """`(outputs, labels)` of one model over a dataset (numpy, in order).

        A run trained with `training.length_buckets` reads the dataset (the
        padded batches of `dataset()`) in batches of similar length, each
        cut to its longest one (`predict_outputs(..., length_buckets=)`):
        the same outputs, in the same order, for less work. (The exports,
        `kdplug export`, keep the fixed padded shape a deployed model is
        called with.)"""
        from kdplug.evaluation.measure import predict_outputs

        return predict_outputs(self.model(role), dataset, jit_compile=jit_compile,
                               length_buckets=self.models.length_buckets())

    def predict(self, texts, pairs=None, role="student", batch_size=None):
        """One record per text: the model's prediction in the run's terms.

        - classification: `{"text", "label", "probabilities": {class:
          softmax}}`;
        - multi_label: `{"text", "labels": [classes with sigmoid > 0.5],
          "probabilities": {class: sigmoid}}`;
        - regression: `{"text", "value"}` (the model's raw output);
        - token_classification: `{"text", "words", "tags"}`, one tag per
          word (the argmax on its first word piece; None for a word beyond
          `data.sequence_length`);
        - extractive_qa: `{"text", "pair", "answer", "start", "end",
          "score", "null_score"}`: the question, the context, the best span
          over every window of the context (`"answer" ==
          pair[start:end]`; "" with start -1 when no span fits), its start
          + end logit and the "no answer" score (SQuAD v2.0 answers ""
          when `null_score > score`).

        A class is its name when the run has names, else its id (a string
        key in `probabilities`, as JSON writes it). With `pairs`, each
        record has `"pair"` after `"text"`.

        Args:
            texts: list of str.
            pairs: second texts (runs on pairs), or None.
            role: `student` or `teacher`.
            batch_size: default the run's evaluation batch.

        Returns:
            A list of dicts, in the order of `texts`.
        """
        texts = list(texts)
        if self.task.label_kind == "tags":
            return self._predict_tags(texts, role, batch_size)
        if self.task.label_kind == "span":
            return self._predict_spans(texts, pairs, role, batch_size)
        outputs, _ = self.outputs(role, self.dataset(self.examples(texts, pairs),
                                                     batch_size, roles=[role]))
        records = []
        for i, text in enumerate(texts):
            record = {"text": text}
            if pairs is not None:
                record["pair"] = pairs[i]
            record.update(self._prediction(outputs[i]))
            records.append(record)
        return records

    def read_labelled(self, path, field="--data"):
        """A labelled file's examples, read with the run's columns and turned
        into its labels (`kdplug.run.run_inputs.read_labelled`; for token
        classification, the tags put on word pieces as the run did)."""
        from kdplug.data.readers import Splits
        from kdplug.run.run_inputs import read_labelled

        examples, label_map = read_labelled(
            path, self.config.data, self.task.label_kind,
            None if self.task.label_kind == "float" else self.label_names,
            run=self.name, field=field)
        splits = Splits({"test": examples}, label_map)
        self.task.prepare(splits, self.models.encoder)
        return splits["test"]

    def read_split(self, name):
        """One split of the run's own data (`train`, `dev` or `test`), read
        as the run read it: its data config, columns, class names and seed
        (so `dev` carved out of `train` is the same rows).

        Examples:

        ```python
        run.evaluate(run.read_split("test"))  # the run's test metrics again
        ```
        """
        from kdplug.config.sections import DataConfig
        from kdplug.data.readers import Splits
        from kdplug.data.readers import IN_MEMORY
        from kdplug.data.readers import describe_sources
        from kdplug.data.readers import read_splits

        if self.config.data.path == IN_MEMORY:
            raise KdplugError(f"--split {name}: run {self.name!r} read in-memory data "
                              "(`Experiment(config, data=...)`), which a run folder "
                              "does not keep; pass the rows with --data FILE")
        key = DataConfig.SPLIT_FILES[name]
        splits = read_splits(self.config.data, self.config.resolve_path,
                             label_kind=self.task.label_kind, seed=self.config.seed)
        if splits[key] is None:
            raise KdplugError(f"--split {name}: run {self.name!r} has no {name} split "
                              f"(its data: {describe_sources(self.config.data)})")
        part = Splits({"test": splits[key]}, splits.label_map)
        self.task.prepare(part, self.models.encoder)
        return part["test"]

    def metric_names(self):
        """The metrics the run reports: the task's primary, then
        `evaluation.metrics`."""
        return self.task.metric_names(self.config.evaluation)

    def evaluate(self, examples, roles=None, batch_size=None):
        """`{role: {metric: value}}` of each model on labelled examples
        (`read_labelled`), with the run's metrics (`metric_names`)."""
        names = self.metric_names()
        roles = list(roles or self.roles)
        dataset = self.dataset(examples, batch_size, roles=roles)
        return {role: self.task.metrics(names, *self.outputs(role, dataset))
                for role in roles}

    def _batch_size(self, batch_size):
        return batch_size or max(self.config.training.batch_size, EVAL_BATCH_SIZE)

    def _prediction(self, output):
        """The fields of one sentence-level output (see `predict`)."""
        kind = self.task.label_kind
        output = np.asarray(output, "float64")
        if kind == "float":
            return {"value": float(output.reshape(-1)[0])}
        classes = [self.label(i) for i in range(output.shape[-1])]
        if kind == "multi":
            probabilities = 1.0 / (1.0 + np.exp(-output))
            chosen = [name for name, p in zip(classes, probabilities) if p > 0.5]
            return {"labels": chosen, "probabilities": _by_class(classes, probabilities)}
        probabilities = softmax(output)
        return {"label": classes[int(np.argmax(output))],
                "probabilities": _by_class(classes, probabilities)}

    def _predict_tags(self, texts, role, batch_size):
        """Token classification: each word's tag (see `predict`)."""
        import tensorflow as tf

        from kdplug.data.token_alignment import align_word_label_batch

        words = [text.split() for text in texts]
        # Each word's index on its first piece says where every word went.
        aligned = align_word_label_batch(
            self.models.encoder.tokenizer, words,
            [list(range(len(example))) for example in words],
            self.config.data.sequence_length)
        dataset = tf.data.Dataset.from_tensor_slices(
            (aligned.features, aligned.labels)).batch(self._batch_size(batch_size))
        outputs, _ = self.outputs(role, dataset)
        return [{"text": text, "words": example,
                 "tags": word_tags(outputs[i], aligned.labels[i], len(example),
                                   self.label)}
                for i, (text, example) in enumerate(zip(texts, words))]

    def _predict_spans(self, questions, contexts, role, batch_size):
        """Extractive QA: each question's answer in its context (see
        `predict`)."""
        from kdplug.data.squad_examples import QAExample

        asked = [QAExample(str(i), question, context)
                 for i, (question, context) in enumerate(zip(questions, contexts))]
        windows = self.task.windows(asked, self.models.encoder)
        outputs, labels = self.outputs(
            role, self.dataset(windows, batch_size, roles=[role]))
        answers = self.task.answers(outputs, labels)
        records = []
        for example in asked:
            answer = answers[example.id]
            end = answer.char_start + len(answer.text) if answer.char_start >= 0 else -1
            records.append({"text": example.question, "pair": example.context,
                            "answer": answer.text, "start": answer.char_start,
                            "end": end, "score": answer.score,
                            "null_score": answer.null_score})
        return records

    def _check_single_task(self):
        """A method with its own runner (several tasks, a sequence-to-sequence
        student) writes another kind of run folder."""
        from kdplug.plugin.manager import get_plugin_manager
        from kdplug.plugin.method import Method

        name = self.config.method.name
        try:
            method = get_plugin_manager().methods.get(name)
        except KeyError as e:
            raise KdplugError(f"{self.run_dir}: run {self.name!r}: {e.args[0]}") from None
        if method.runner is not Method.runner:
            raise KdplugError(
                f"{self.run_dir}: run {self.name!r} used method {name!r}, whose own "
                "runner writes a multi-model run folder; predict, evaluate and "
                "export read single-task runs (one student, one task)")

    def _check_teacher(self):
        """A teacher that was never fine-tuned has an untrained head, unless
        it came with one (a `.keras` model, a keras-hub classifier preset, a
        Hugging Face classifier folder)."""
        from kdplug.config.sources import resolve_source
        from kdplug.teacher.sources import source_has_head

        source = resolve_source(self.config.teacher.source, self.config.resolve_path)
        if self.config.teacher.finetune is None and not source_has_head(source):
            raise KdplugError(
                f"{self.run_dir}: run {self.name!r} did not fine-tune its teacher "
                "(teacher.finetune is null in its config.yaml), so the teacher's "
                "head is untrained and no fine-tuned teacher is cached; use the "
                "student (--model student)")


def softmax(logits):
    """Softmax over the last axis (float64, shifted by the maximum).

    >>> softmax(np.array([0.0, np.log(3.0)])).round(6).tolist()
    [0.25, 0.75]
    """
    shifted = np.asarray(logits, "float64")
    shifted = shifted - shifted.max(axis=-1, keepdims=True)
    exp = np.exp(shifted)
    return exp / exp.sum(axis=-1, keepdims=True)


def word_tags(outputs, piece_words, num_words, label=int):
    """Each word's tag from per-piece outputs.

    Args:
        outputs: `(sequence_length, num_tags)` logits of one example.
        piece_words: `(sequence_length,)`: the index of the word whose
            first piece each position is, `-1` elsewhere.
        num_words: the example's words.
        label: maps a tag id to what is returned (a name).

    Returns:
        A list of `num_words` tags; None for a word without a position
        (beyond the sequence length, or without a piece).

    >>> word_tags(np.array([[0, 0], [1, 0], [0, 1], [0, 0]]),
    ...           np.array([-1, 0, 1, -1]), 3)
    [0, 1, None]
    """
    tags = [None] * num_words
    for position in np.flatnonzero(np.asarray(piece_words) >= 0):
        tags[int(piece_words[position])] = label(int(np.argmax(outputs[position])))
    return tags


def _by_class(classes, probabilities):
    return {str(name): float(p) for name, p in zip(classes, probabilities)}
