import dataclasses
from typing import Annotated
from typing import List
from typing import Literal
from typing import Optional

import kdplug
from kdplug.config import Items
from kdplug.config import MappingRef
from kdplug.config import NonNegativeFloat
from kdplug.config import PositiveFloat
from kdplug.config import PositiveInt
from kdplug.data import TextCorpus
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.mapping import EMBEDDINGS

STAGES = ("general", "task_intermediate", "task_prediction")


class TinyBertMethod(kdplug.Method):
    """TinyBERT (Jiao et al. 2020): transformer-layer distillation in stages.

    Student layer `m` learns teacher layer `g(m)` (the `mapping`, by default
    TinyBERT's uniform `g(m) = m N / M`) through

    - `embedding_mse`: `MSE(E_S W_e, E_T)` on the embedding-layer outputs
      (`EmbeddingMSE`),
    - `hidden_mse`: `sum_m MSE(H_S^m W_h, H_T^g(m))` on the layer outputs
      (`ProjectedHiddenMSE`),
    - `attention_mse`: `sum_m 1/h sum_heads MSE(A_S^m, A_T^g(m))` on the
      unnormalised attention scores `attention_scores/<i>`, padded queries
      and keys masked out (`AttentionScoreMSE`),
    - `soft_ce`: the prediction-layer soft cross-entropy
      `-softmax(z_T / t) . log_softmax(z_S / t)` (`SoftTargetCrossEntropy`,
      which multiplies by `t^2`).

    `W_e` / `W_h` are learned `Projection`s that exist only where the widths
    differ; they live in the terms (trained with the student, never
    exported). With `projection: shared` (the default) one projection
    `W = W_e = W_h` maps the embeddings and every mapped layer, as the
    reference code's single `fit_dense` (student hidden -> teacher hidden)
    does; `projection: per_layer` gives each student tap its own (kdplug
    before 0.2). The same intermediate terms (hence the same projections)
    are used by `general` and `task_intermediate`.

    Stages (`stages:`, any subset, in this order):

    - `general`: embedding + hidden + attention losses without labels: the
      paper's general distillation, from the *pre-trained* teacher
      (`general_teacher: pretrained`, the teacher as `teacher.source`
      gives it) on a general-domain corpus (`general_corpus`, a text file;
      kdplug ships `data/general_english.txt`, news editorials and product
      reviews). Without `general_corpus` the stage reads the task's
      training texts, labels ignored; `general_teacher: finetuned` distils
      from the fine-tuned teacher (kdplug 0.2).
    - `task_intermediate`: the same intermediate losses on the task's
      transfer set (`data: task`).
    - `task_prediction`: the soft cross-entropy on the logits.

    When the experiment has an `augment:` section, the task stages train on
    the augmented transfer set (the training split plus augmented
    examples), as TinyBERT's data augmentation prescribes: every stage with
    `data: task` reads the transfer set. The `general` stage reads the same
    texts without labels.

    Config:
        stages: which stages to run, a subset of `general`,
            `task_intermediate`, `task_prediction`, in that order.
        mapping: the layer mapping pairing teacher and student transformer
            layers, a registered mapping's name (`uniform`, `skip`, `last`)
            or a name with options (`{name: custom, pairs: [[2, 1], [4, 2]]}`),
            validated with the config; the embeddings always pair with the
            embeddings.
        projection: `shared` (one `W` for the embeddings and every layer,
            the reference's `fit_dense`; the embedding and hidden widths of
            each model must then agree) or `per_layer` (one `W_e` and one
            `W_h` per student layer).
        temperature: softmax temperature of the prediction loss (paper: 1).
        embedding_weight, hidden_weight, attention_weight: weights of the
            intermediate losses (0 drops the term).
        prediction_weight: weight of the prediction loss.
        head_reduction: `group`, `mean` or null, for attention maps with
            different head counts (null requires equal counts, as TinyBERT).
        general_corpus: the general stage's texts: a text file (one text a
            line) or a table whose `data.text_column` holds them, relative
            to the config file; null: the task's training texts.
        general_teacher: `pretrained` (the paper) or `finetuned`: which
            teacher the general stage distils from.
        general_epochs, intermediate_epochs, prediction_epochs: epochs of
            each stage; null uses `training.epochs`.
        general_learning_rate, intermediate_learning_rate,
        prediction_learning_rate: per-stage learning rates; null uses
            `training.learning_rate`.

    Examples:

    ```yaml
    method:
      name: tinybert
      stages: [general, task_intermediate, task_prediction]
      mapping: uniform
      projection: shared
      temperature: 1.0
      general_corpus: ../data/general_english.txt
      general_teacher: pretrained
      general_epochs: 1
    student:
      kind: narrow
      num_layers: 4
      hidden_dim: 312
    ```
    """

    name = "tinybert"
    description = ("TinyBERT: embedding + hidden (projected) + attention-score MSE, "
                   "then soft CE; general and task stages")
    default_student = {"kind": "narrow"}
    task_kinds = ("classification", "regression", "multi_label", "token_classification",
                  "extractive_qa")
    path_fields = ("general_corpus",)

    @dataclasses.dataclass
    class Config:
        stages: Annotated[List[Literal[STAGES]],
                          Items(min=1, distinct=True, noun="stage")] = dataclasses.field(
            default_factory=lambda: list(STAGES))
        mapping: MappingRef = "uniform"
        projection: Literal["shared", "per_layer"] = "shared"
        temperature: PositiveFloat = 1.0
        embedding_weight: NonNegativeFloat = 1.0
        hidden_weight: NonNegativeFloat = 1.0
        attention_weight: NonNegativeFloat = 1.0
        prediction_weight: NonNegativeFloat = 1.0
        head_reduction: Optional[Literal["group", "mean"]] = None
        general_corpus: Optional[str] = None
        general_teacher: Literal["pretrained", "finetuned"] = "pretrained"
        general_epochs: Optional[PositiveInt] = None
        intermediate_epochs: Optional[PositiveInt] = None
        prediction_epochs: Optional[PositiveInt] = None
        general_learning_rate: Optional[PositiveFloat] = None
        intermediate_learning_rate: Optional[PositiveFloat] = None
        prediction_learning_rate: Optional[PositiveFloat] = None

        def __post_init__(self):
            stages = list(self.stages)
            if stages != sorted(stages, key=STAGES.index):
                raise ConfigError(f"must be in the order {', '.join(STAGES)}",
                                  field="stages", value=stages)
            if (self.intermediate_stages() and self.embedding_weight == 0
                    and self.hidden_weight == 0 and self.attention_weight == 0):
                raise ConfigError(
                    "embedding_weight, hidden_weight and attention_weight are "
                    "all 0: the general / task_intermediate stages have no loss")
            if "task_prediction" in stages and self.prediction_weight == 0:
                raise ConfigError("must be > 0 for task_prediction",
                                  field="prediction_weight", value=0)

        def intermediate_stages(self):
            return [s for s in self.stages if s != "task_prediction"]

    def layer_mapping(self):
        """The configured `kdplug.mapping.LayerMapping`."""
        return MappingRef.of(self.config.mapping, path="method.mapping").build()

    def layer_map(self, teacher, student):
        """`(teacher_layer, student_layer)` pairs of transformer layers (1-based)."""
        pairs = self.layer_mapping().resolve(teacher, student)
        return [(t, s) for t, s in pairs if EMBEDDINGS not in (t, s)]

    def shared_projection(self, teacher, student, feature_pairs):
        """The one `Projection` (`fit_dense`) of `projection: shared`.

        `None` when every pair's widths agree (nothing to project); a
        `KdplugError` when the width-mismatched pairs need different maps
        (e.g. a student whose embedding width differs from its hidden width).
        """
        from kdplug.mapping import Projection

        widths = {(teacher.tap_width(t), student.tap_width(s))
                  for t, s in feature_pairs}
        mismatched = sorted((t, s) for t, s in widths if t != s)
        if not mismatched:
            return None
        if len(mismatched) > 1:
            raise KdplugError(
                f"tinybert: projection: shared needs one student -> teacher "
                f"width map for the embeddings and every mapped layer, got "
                f"{', '.join(f'{s} -> {t}' for t, s in mismatched)}; set "
                "method.projection: per_layer")
        (t_width, s_width), = mismatched
        return Projection(t_width, s_width, name="fit_dense")

    def intermediate_terms(self, teacher, student):
        """`embedding_mse`, `hidden_mse`, `attention_mse` (weights > 0 only)."""
        from kdplug.mapping import check_tap_pair
        from kdplug.terms import AttentionScoreMSE
        from kdplug.terms import EmbeddingMSE
        from kdplug.terms import ProjectedHiddenMSE

        cfg = self.config
        pairs = self.layer_map(teacher, student)
        hidden_pairs = [(f"hidden/{t}", f"hidden/{s}") for t, s in pairs]
        feature_pairs = []
        if cfg.embedding_weight > 0:
            check_tap_pair(teacher, student, "embeddings", "embeddings")
            feature_pairs.append(("embeddings", "embeddings"))
        if cfg.hidden_weight > 0:
            for t_tap, s_tap in hidden_pairs:
                check_tap_pair(teacher, student, t_tap, s_tap)
            feature_pairs.extend(hidden_pairs)
        shared = {}
        if cfg.projection == "shared":
            shared["shared_projection"] = self.shared_projection(
                teacher, student, feature_pairs)
        terms = []
        if cfg.embedding_weight > 0:
            terms.append(EmbeddingMSE.from_models(
                teacher, student, weight=cfg.embedding_weight, **shared))
        if cfg.hidden_weight > 0 and pairs:
            terms.append(ProjectedHiddenMSE.from_models(
                teacher, student, hidden_pairs, weight=cfg.hidden_weight,
                **shared))
        if cfg.attention_weight > 0 and pairs:
            scores = [(f"attention_scores/{t}", f"attention_scores/{s}")
                      for t, s in pairs]
            for t_tap, s_tap in scores:
                check_tap_pair(teacher, student, t_tap, s_tap, cfg.head_reduction)
            terms.append(AttentionScoreMSE(
                scores, weight=cfg.attention_weight,
                head_reduction=cfg.head_reduction))
        if not terms:
            raise KdplugError(
                "tinybert: no intermediate loss applies (the mapping pairs no "
                "transformer layers and embedding_weight is 0)")
        return terms

    def stages(self, teacher, student):
        cfg = self.config
        stages = []
        intermediate = None
        if cfg.intermediate_stages():
            intermediate = self.intermediate_terms(teacher, student)
        if "general" in cfg.stages:
            stages.append(kdplug.Stage(
                "general", intermediate, epochs=cfg.general_epochs,
                data=TextCorpus.stage_data(cfg.general_corpus, "method.general_corpus"),
                learning_rate=cfg.general_learning_rate, teacher=cfg.general_teacher))
        if "task_intermediate" in cfg.stages:
            stages.append(kdplug.Stage(
                "task_intermediate", intermediate, epochs=cfg.intermediate_epochs,
                data="task", learning_rate=cfg.intermediate_learning_rate))
        if "task_prediction" in cfg.stages:
            stages.append(kdplug.Stage(
                "task_prediction",
                [self.task.soft_term(cfg.temperature, weight=cfg.prediction_weight)],
                epochs=cfg.prediction_epochs, data="task",
                learning_rate=cfg.prediction_learning_rate))
        return stages
