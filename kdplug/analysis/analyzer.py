"""`Analyzer`: probing and behaviour of a teacher and its students."""

import dataclasses
import logging
import os
import re
from typing import Callable

import numpy as np

from kdplug import storage
from kdplug.analysis import plots
from kdplug.analysis.analysis_report import analysis_markdown
from kdplug.analysis.behaviour import behaviour_report
from kdplug.analysis.checks import is_probing_file
from kdplug.analysis.probe import probe_layers
from kdplug.analysis.probing import SURFACE_TASKS
from kdplug.analysis.probing import SYNTACTIC_TASKS
from kdplug.analysis.probing import build_probing_tasks
from kdplug.analysis.probing import load_spacy_parser
from kdplug.analysis.probing import read_senteval
from kdplug.analysis.probing import write_senteval
from kdplug.analysis.representations import POOLED
from kdplug.analysis.representations import sentence_representations
from kdplug.config.schema import to_dict
from kdplug.config.sections import AnalysisConfig
from kdplug.data.examples import Examples
from kdplug.data.text_encoder import needs_pair_inputs
from kdplug.errors import DataError
from kdplug.errors import KdplugError
from kdplug.evaluation.measure import count_params
from kdplug.evaluation.measure import predict_outputs

log = logging.getLogger(__name__)

ANALYSIS_JSON = "analysis.json"
ANALYSIS_MD = "analysis.md"
PROBING_SETS = "probing_sets"


@dataclasses.dataclass
class AnalysedModel:
    """A model to analyse and how texts become its inputs.

    Args:
        name: its name in tables and plots (`teacher`, `student`, a run's
            name).
        model: a kdplug model with `taps()` (its `call()` returns logits).
        dataset: `fn(examples, batch_size) -> tf.data.Dataset` of batched
            `(features, labels)` this model reads (e.g.
            `TextEncoder.dataset`; a word-id student's `word_dataset`).
        role: `teacher` or `student`.
        jit_compile: XLA-compile its forward pass over the probing texts
            (a run's `training.jit_compile`; compiling a toy model on a CPU
            takes longer than the pass).
        length_buckets: a `kdplug.data.length_buckets.LengthBuckets` (a
            run's `training.length_buckets`): its passes over the probing
            texts and the behaviour split read them in batches of similar
            length, each cut to its longest one, the results in the texts'
            order (`read_by_length`); None: padded batches.

    Examples:

    ```python
    teacher = AnalysedModel("teacher", teacher_model, encoder.dataset, "teacher")
    ```
    """

    name: str
    model: object
    dataset: Callable
    role: str = "student"
    jit_compile: bool = True
    length_buckets: object = None

    def representations(self, texts, poolings, batch_size):
        examples = Examples(list(texts), np.zeros(len(texts), "int64"))
        return sentence_representations(
            self.model, self.dataset(examples, batch_size), poolings=poolings,
            jit_compile=self.jit_compile, length_buckets=self.length_buckets)

    def probabilities(self, examples, batch_size):
        """Softmax of the model's logits over `examples`, in order."""
        logits, _ = predict_outputs(self.model, self.dataset(examples, batch_size),
                                    length_buckets=self.length_buckets)
        logits = logits - logits.max(axis=-1, keepdims=True)
        e = np.exp(logits.astype("float64"))
        return e / e.sum(axis=-1, keepdims=True)


class Analyzer:
    """Probes every layer of a teacher and its students and compares their
    behaviour on a labelled split (docs/analysis.md).

    Probing (Conneau et al. 2018; Tenney et al. 2019): each model is frozen;
    every layer's sentence vector ([CLS] and mean-pooled; a BiLSTM's pooled
    state) of every probing example is computed once (texts shared by
    several tasks are encoded once), and a probe per layer, task and seed is
    trained on the train part and scored on the test part. Behaviour: each
    student against the teacher on the same examples (`behaviour_report`).

    Args:
        config: an `AnalysisConfig` (defaults: every part on).
        base_dir: the folder relative probing-file and corpus paths start
            from (a run's config folder).

    Examples:

    ```python
    analyzer = Analyzer(AnalysisConfig())
    tasks = analyzer.probing_tasks(train_texts)
    result = analyzer.analyze(teacher, [student], test_examples, tasks)
    analyzer.write(result, "runs/quickstart/analysis")
    ```
    """

    def __init__(self, config=None, base_dir=None):
        self.config = config or AnalysisConfig()
        self.base_dir = base_dir or os.getcwd()
        # What the reports must say beyond their tables (a probing task
        # left out on small data), in `analyze()`'s `warnings`.
        self.warnings = []
        # Results kept per (model, tasks) and (model, examples): a teacher
        # shared by several runs or students is probed and run once.
        self._probed = {}
        self._probabilities = {}

    # ------------------------------------------------------------- probing sets
    def probing_tasks(self, corpus_texts=None):
        """The configured probing tasks: SentEval files read as they are,
        names built from `corpus` (`train`: `corpus_texts`, the run's
        training texts). A built task the corpus is too small for (fewer
        than 20 examples in 2 classes) is left out with a warning, logged
        and kept for the reports (`warnings`): the other tasks and the
        behaviour part still run."""
        cfg = self.config.probing
        if cfg is None:
            return []
        names = cfg.tasks
        parser = None
        if names is None:  # the defaults: surface tasks, syntax when spaCy is there
            names = list(SURFACE_TASKS)
            try:
                parser = load_spacy_parser()
                names += list(SYNTACTIC_TASKS)
            except KdplugError as e:
                log.info("probing: syntactic tasks skipped (%s)", e)
        tasks = {n: read_senteval(self._path(n)) for n in names if is_probing_file(n)}
        built = [n for n in names if n not in tasks]
        if built:
            if parser is None and set(built) & set(SYNTACTIC_TASKS):
                parser = load_spacy_parser()
            sentences, source = self._corpus(corpus_texts)
            skipped = []
            tasks.update(build_probing_tasks(
                built, sentences, seed=cfg.seeds[0], parser=parser,
                max_examples=cfg.max_examples, source=source, skipped=skipped))
            for _, reason in skipped:
                self.warn(f"{reason}; left out of this analysis")
        return [tasks[n] for n in names if n in tasks]

    def warn(self, message, keep=True):
        """Logs `message` as a warning and returns it; `keep`: also kept
        for every report of this analyzer (`analysis.json`'s `warnings`, a
        section of `analysis.md`), as for the probing tasks they share."""
        log.warning("analysis: %s", message)
        if keep and message not in self.warnings:
            self.warnings.append(message)
        return message

    def _corpus(self, corpus_texts):
        corpus = self.config.probing.corpus
        if corpus == "train":
            if not corpus_texts:
                raise KdplugError("analysis.probing.corpus is `train` but no "
                                  "training texts were given")
            return list(corpus_texts), "the run's training texts"
        path = self._path(corpus)
        if not os.path.isfile(path):
            raise DataError(f"analysis.probing.corpus: file not found: {path}")
        with open(path, encoding="utf-8") as f:
            lines = [line.strip() for line in f]
        sentences = [line for line in lines if line]
        if not sentences:
            raise DataError(f"analysis.probing.corpus: {path} has no sentences")
        return sentences, path

    def _path(self, path):
        return os.path.normpath(os.path.join(self.base_dir, os.path.expanduser(path)))

    # ------------------------------------------------------------- analysing
    def probe(self, model, tasks):
        """`{task: {layer: {pooling: stats}}}` for one `AnalysedModel`.

        `stats` is `probe_layers`' entry: mean/std test accuracy over the
        configured seeds, dev and train accuracy, each seed's result.
        """
        key = (id(model.model), tuple(map(id, tasks)))
        if key in self._probed:
            return self._probed[key]
        if needs_pair_inputs(model.model):
            log.info("probing %s: skipped, it reads sentence pairs and the probing "
                     "sets are single sentences", model.name)
            self._probed[key] = None
            return None
        cfg = self.config.probing
        texts = sorted({t for task in tasks for split in task.texts.values() for t in split})
        index = {t: i for i, t in enumerate(texts)}
        reps = model.representations(texts, tuple(cfg.poolings), cfg.batch_size)
        log.info("probing %s: %d texts, layers %s", model.name, len(texts),
                 ", ".join(reps))
        results = {}
        for task in tasks:
            rows = {s: np.asarray([index[t] for t in task.texts[s]], "int64")
                    for s in ("train", "dev", "test")}
            labels = {s: task.label_ids(s) if len(rows[s]) else None
                      for s in ("train", "dev", "test")}
            per_layer = {}
            for pooling in _poolings(reps):
                features = {
                    layer: {s: (by_pooling[pooling][rows[s]] if len(rows[s]) else None)
                            for s in ("train", "dev", "test")}
                    for layer, by_pooling in reps.items() if pooling in by_pooling}
                probed = probe_layers(features, labels, kind=cfg.probe,
                                      seeds=tuple(cfg.seeds), max_iter=cfg.max_iter,
                                      train_fraction=cfg.train_fraction)
                for layer, stats in probed.items():
                    per_layer.setdefault(layer, {})[pooling] = stats
            results[task.name] = per_layer
        self._probed[key] = results
        return results

    def behaviour(self, teacher, student, examples, label_names=None):
        """`behaviour_report` of `student` against `teacher` on the examples
        with a gold label (a pair's text is shown as `a [SEP] b`, its length
        counts the words of both); with `label_names` (the run's class
        names, in id order) the report keeps them, and `analysis.md` shows
        gold labels by name."""
        cfg = self.config.behaviour
        labels = np.asarray(examples.labels)
        if not (labels >= 0).all():
            examples = examples.select(np.flatnonzero(labels >= 0))
            labels = np.asarray(examples.labels)
        pairs = examples.pairs or [None] * len(examples)
        texts = [a if b is None else f"{a} [SEP] {b}" for a, b in zip(examples.texts, pairs)]
        lengths = [len(a.split()) + (len(b.split()) if b else 0)
                   for a, b in zip(examples.texts, pairs)]
        report = behaviour_report(
            labels, self._predict(teacher, examples), self._predict(student, examples),
            texts, lengths=np.asarray(lengths), num_bins=cfg.calibration_bins,
            top_n=cfg.top_n)
        if label_names:
            report["label_names"] = [str(name) for name in label_names]
        return report

    def _predict(self, model, examples):
        key = (id(model.model), id(examples))
        if key not in self._probabilities:
            batch = self.config.probing.batch_size if self.config.probing else 64
            self._probabilities[key] = model.probabilities(examples, batch)
        return self._probabilities[key]

    def analyze(self, teacher, students, examples=None, tasks=(), label_names=None):
        """Probes the teacher and every student on `tasks`, and compares
        each student's behaviour with the teacher's on `examples`.

        The behaviour part compares predicted classes: on examples whose
        labels are not class ids (a regression, multi-label or token
        classification run) it is left out with a warning.

        Args:
            teacher: an `AnalysedModel`.
            students: a list of `AnalysedModel`.
            examples: labelled `Examples` for the behaviour part (None: no
                behaviour).
            tasks: `ProbingTask`s (from `probing_tasks()`).
            label_names: the class names in id order (None: ids), shown
                for gold labels.

        Returns:
            A JSON-able dict: `models`, `probing` (tasks and results per
            model), `behaviour` (per student) and `warnings` (what was
            left out and why; only when something was).
        """
        models = [teacher, *students]
        names = [m.name for m in models]
        if len(set(names)) != len(names):
            raise KdplugError(f"analysed models need distinct names, got {names}")
        result = {"models": [{"name": m.name, "role": m.role,
                              "class": type(m.model).__name__,
                              "params": count_params(m.model)} for m in models],
                  "config": to_dict(self.config)}
        if self.config.probing is not None and tasks:
            probed = {m.name: self.probe(m, tasks) for m in models}
            result["probing"] = {
                "tasks": [t.to_dict() for t in tasks],
                "results": {name: r for name, r in probed.items() if r is not None},
            }
        warnings = list(self.warnings)  # the probing tasks', then this call's
        if self.config.behaviour is not None and examples is not None:
            if _class_ids(examples.labels):
                result["behaviour"] = {
                    s.name: self.behaviour(teacher, s, examples, label_names)
                    for s in students}
            else:
                warnings.append(self.warn(
                    "behaviour: left out: it compares the predicted classes of "
                    "teacher and student, and these labels are not class ids (a "
                    "regression, multi-label or token classification task); the "
                    "probing part does not depend on them", keep=False))
        if warnings:
            result["warnings"] = warnings
        return result

    # ------------------------------------------------------------- writing
    def write(self, result, output_dir, tasks=(), title="Analysis"):
        """Writes `analysis.json`, `analysis.md`, the PNG plots and the
        probing sets (SentEval format + their metadata) into `output_dir`.

        Returns:
            The path of `analysis.md`.
        """
        os.makedirs(output_dir, exist_ok=True)
        result = dict(result, plots={})
        probing = result.get("probing")
        if probing:
            for pooling in _result_poolings(probing["results"]):
                table = {model: {task: {layer: stats[pooling if pooling in stats else POOLED]
                                        ["test_accuracy"]
                                        for layer, stats in layers.items()}
                                 for task, layers in per_model.items()}
                         for model, per_model in probing["results"].items()}
                name = f"probing_{pooling}"
                result["plots"][name] = os.path.basename(plots.probing_heatmap(
                    table, os.path.join(output_dir, f"{name}.png"),
                    title=f"Probe test accuracy by layer ({_POOLING_TITLES[pooling]})"))
            for task in tasks:
                folder = os.path.join(output_dir, PROBING_SETS)
                write_senteval(task, os.path.join(folder, f"{task.name}.txt"))
                storage.write_json(os.path.join(folder, f"{task.name}.json"),
                                   task.to_dict())
        teacher_name = result["models"][0]["name"]
        for student, report in (result.get("behaviour") or {}).items():
            name = f"reliability_{_slug(student)}"
            calibrations = {teacher_name: report["calibration"]["teacher"],
                            student: report["calibration"]["student"]}
            result["plots"][name] = os.path.basename(plots.reliability_diagram(
                calibrations, os.path.join(output_dir, f"{name}.png"),
                title=f"Reliability: {teacher_name} vs {student}"))
        storage.write_json(os.path.join(output_dir, ANALYSIS_JSON), result)
        return storage.write_text(os.path.join(output_dir, ANALYSIS_MD),
                                  analysis_markdown(result, title))


def analyze_models(teacher, students, examples=None, corpus_texts=None,
                   output_dir=None, config=None, base_dir=None, title="Analysis",
                   label_names=None):
    """Probing and behaviour of any teacher and students kdplug can load,
    from Python.

    Args:
        teacher: an `AnalysedModel`.
        students: a list of `AnalysedModel`.
        examples: labelled `Examples` for the behaviour part (None: none).
        corpus_texts: the sentences built probing tasks come from (with
            `analysis.probing.corpus: train`).
        output_dir: where to write the files (None: nothing written).
        config: an `AnalysisConfig` (default: every default).
        base_dir: where relative probing-file and corpus paths start
            (default: the working directory).
        title: the Markdown title.
        label_names: the class names in id order (None: gold labels shown
            as ids; `class_names(splits.label_map)` gives a run's).

    Returns:
        The result dict (`Analyzer.analyze`).

    Examples:

    ```python
    from kdplug.analysis import AnalysedModel, analyze_models
    result = analyze_models(
        AnalysedModel("teacher", teacher, encoder.dataset, "teacher"),
        [AnalysedModel("student", student, encoder.dataset)],
        examples=splits["test"], corpus_texts=splits["train"].texts,
        output_dir="analysis")
    result["behaviour"]["student"]["agreement"]
    ```
    """
    analyzer = Analyzer(config, base_dir=base_dir)
    tasks = analyzer.probing_tasks(corpus_texts)
    result = analyzer.analyze(teacher, students, examples, tasks, label_names)
    if output_dir:
        analyzer.write(result, output_dir, tasks, title=title)
    return result


_POOLING_TITLES = {"cls": "[CLS] vector; a BiLSTM's pooled state",
                   "mean": "mean over tokens; a BiLSTM's pooled state",
                   POOLED: "pooled state"}


def class_names(label_map):
    """The class names of a `LabelMap` (`splits.label_map`) in id order, or
    None when it has none (classes given as ids)."""
    return list(label_map.names) if label_map is not None and label_map.named else None


def _class_ids(labels):
    """Whether `labels` are one class id per example (what the behaviour
    part compares predictions with)."""
    labels = np.asarray(labels)
    return labels.ndim == 1 and np.issubdtype(labels.dtype, np.integer)


def _poolings(reps):
    return list(dict.fromkeys(p for by_pooling in reps.values() for p in by_pooling))


def _result_poolings(results):
    """The poolings of a result's heat maps: `cls` / `mean` when any model
    has them (a pooled-only model appears in each), else `pooled`."""
    found = {p for per_model in results.values() for layers in per_model.values()
             for stats in layers.values() for p in stats}
    own = [p for p in ("cls", "mean") if p in found]
    return own or [POOLED]


def _slug(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "student"
