import dataclasses
from typing import Literal
from typing import Optional

import kdplug
from kdplug.config import NonNegativeFloat
from kdplug.config import PositiveFloat
from kdplug.config import PositiveInt
from kdplug.config import Probability
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.mapping import UniformMapping
from kdplug_plugins.mobilebert_pkt.selectors import train_all
from kdplug_plugins.mobilebert_pkt.selectors import train_block
from kdplug_plugins.mobilebert_pkt.selectors import train_body
from kdplug_plugins.mobilebert_pkt.selectors import train_lower

VARIANTS = ("progressive", "auxiliary", "joint-then-task")


class MobileBertPKTMethod(kdplug.Method):
    """MobileBERT's knowledge transfer (Sun et al. 2020), for classifiers.

    Layer `l` of the student learns the teacher's feature map `hidden/<g(l)>`
    (`FeatureMapTransfer`, per-token MSE, by default between the
    layer-normalised maps `MSE(LN(H_T), LN(H_S))` as in the reference code),
    the per-token mean and variance of that map over the hidden units
    (`FeatureStatisticsTransfer`, the reference code's `beta` and `gamma`
    terms) and its attention distributions `attention/<g(l)>`
    (`AttentionTransfer`, KL per head and query), weighted as the reference
    (TF Model Garden's MobileBERT distillation) weighs them:

        L_l = 100 FMT_l + 5000 (mu_S - mu_T)^2 + 5 |var_S - var_T| + 1 AT_l

    where `g` is the uniform mapping
    `g(l) = l N / M` (the identity when the student is as deep as the
    teacher, the `bottleneck` student's default).
    Then the logits are distilled with the soft-target cross-entropy (and,
    with `alpha < 1`, the hard-label cross-entropy).

    Variants (`variant:`), from the paper's Section 4:

    - `progressive` (default): `M` stages `layer_1 .. layer_M`; stage `l`
      trains on layer `l`'s losses, divided by `l` as in the reference code.
      With `lower_layers: train` (the reference's
      `if_freeze_previous_layers: false`; the paper: lower layers are "tuned
      rather than entirely frozen") the embeddings and blocks `1 .. l`
      train; with `freeze` (kdplug 0.2) block `l` only, the embeddings in
      stage 1 only, and the losses are not divided. Blocks above are
      unused. Then the `distill` stage trains everything.
    - `auxiliary`: one stage, the layer-wise losses of all layers summed and
      added to the soft (+ hard) loss.
    - `joint-then-task`: a `joint` stage on the summed layer-wise losses
      (embeddings and blocks train, the head is unused), then `distill`.

    The paper's pre-training distillation (MLM + NSP) is replaced by task
    distillation of the logits; the embeddings are trained, not copied from
    the teacher (their width differs) (docs/methods/mobilebert_pkt.md
    lists every deviation). Student and teacher hidden widths must match
    (the `bottleneck` student's inter-block width is the teacher's).

    Config:
        variant: `progressive`, `auxiliary` or `joint-then-task`.
        feature_map_weight: weight of the feature-map loss (per layer; 100,
            the reference's `hidden_distill_factor`).
        feature_map_norm: `layer` (both maps layer-normalised over the
            hidden units, no learned scale or shift, before the MSE: the
            reference code) or `none` (the raw maps, kdplug 0.1).
        mean_weight, variance_weight: weights of the distribution terms
            (`FeatureStatisticsTransfer`: each token's mean and variance
            over the hidden units, matched; 5000 and 5, the reference's
            `beta_distill_factor` and `gamma_distill_factor`); 0 drops one.
        attention_weight: weight of the attention loss (per layer).
        temperature: softmax temperature T of the soft loss.
        alpha: weight of the soft loss; the hard loss gets `1 - alpha`.
        head_reduction: `group`, `mean` or null: how attention maps with
            different head counts are compared (only used when they differ;
            the paper's IB-BERT teacher has the student's head count).
        lower_layers: `train` (the reference code) or `freeze` (kdplug
            0.2): what a progressive stage does with the layers below its
            own (see the variants above).
        layer_epochs: epochs of each layer-wise stage (`layer_<l>`,
            `joint`); null uses `training.epochs`.
        layer_learning_rate: learning rate of the layer-wise stages; null
            uses `training.learning_rate`.
        distill_epochs: epochs of the `distill` / `auxiliary` stage; null
            uses `training.epochs`.

    Examples:

    ```yaml
    method:
      name: mobilebert-pkt
      variant: progressive
      feature_map_norm: layer
      layer_epochs: 1
      temperature: 1.0
      alpha: 1.0
    student:
      kind: bottleneck
      preset: tiny
    ```
    """

    name = "mobilebert-pkt"
    description = ("MobileBERT: layer-wise feature-map + attention transfer "
                   "(progressive / auxiliary / joint), then soft targets")
    default_student = {"kind": "bottleneck"}
    task_kinds = ("classification", "regression", "multi_label")

    @dataclasses.dataclass
    class Config:
        variant: Literal["progressive", "auxiliary", "joint-then-task"] = (
            "progressive")
        feature_map_weight: NonNegativeFloat = 100.0
        feature_map_norm: Literal["layer", "none"] = "layer"
        mean_weight: NonNegativeFloat = 5000.0
        variance_weight: NonNegativeFloat = 5.0
        attention_weight: NonNegativeFloat = 1.0
        temperature: PositiveFloat = 1.0
        alpha: Probability = 1.0
        head_reduction: Optional[Literal["group", "mean"]] = "group"
        lower_layers: Literal["train", "freeze"] = "train"
        layer_epochs: Optional[PositiveInt] = None
        layer_learning_rate: Optional[PositiveFloat] = None
        distill_epochs: Optional[PositiveInt] = None

        def __post_init__(self):
            if self.feature_map_weight == 0 and self.attention_weight == 0:
                raise ConfigError(
                    "feature_map_weight and attention_weight are both 0: "
                    "there is nothing to transfer layer by layer (use kd)")

    def layer_map(self, teacher, student):
        """`(teacher_layer, student_layer)` pairs, 1-based, one per student layer."""
        n, m = int(teacher.num_layers), int(student.num_layers)
        if m > n:
            raise KdplugError(
                f"mobilebert-pkt maps every student layer to a teacher layer; "
                f"the student has {m} layers but the teacher only {n}")
        return UniformMapping().layer_pairs(n, m)

    def layer_terms(self, teacher, student, pairs, scale=1.0):
        """The feature-map and attention terms for `pairs` (summed over them),
        their weights multiplied by `scale`."""
        from kdplug.mapping import check_tap_pair
        from kdplug.terms import AttentionTransfer
        from kdplug.terms import FeatureMapTransfer
        from kdplug.terms import FeatureStatisticsTransfer

        cfg = self.config
        hidden = [(f"hidden/{t}", f"hidden/{s}") for t, s in pairs]
        attention = [(f"attention/{t}", f"attention/{s}") for t, s in pairs]
        for t_tap, s_tap in hidden:
            if not check_tap_pair(teacher, student, t_tap, s_tap):
                continue  # a student of its own tokenizer: refused by the runner
            t_width, s_width = teacher.tap_width(t_tap), student.tap_width(s_tap)
            if t_width != s_width:
                raise KdplugError(
                    f"mobilebert-pkt compares feature maps without a "
                    f"projection, but the teacher's {t_tap!r} is {t_width} wide "
                    f"and the student's {s_tap!r} {s_width}; use the bottleneck "
                    "student (its inter-block width is the teacher's)")
        for t_tap, s_tap in attention:
            check_tap_pair(teacher, student, t_tap, s_tap, cfg.head_reduction)
        terms = []
        if cfg.feature_map_weight > 0:
            terms.append(FeatureMapTransfer(
                hidden, weight=cfg.feature_map_weight * scale,
                layer_norm=cfg.feature_map_norm == "layer"))
        for statistic, weight in (("mean", cfg.mean_weight),
                                  ("variance", cfg.variance_weight)):
            if weight > 0:
                terms.append(FeatureStatisticsTransfer(hidden, statistic,
                                                       weight=weight * scale))
        if cfg.attention_weight > 0:
            terms.append(AttentionTransfer(
                attention, weight=cfg.attention_weight * scale,
                head_reduction=cfg.head_reduction))
        return terms

    def task_terms(self):
        """The task's soft term (+ its hard term when `alpha < 1`):
        soft-target and hard cross-entropy for classification."""
        cfg = self.config
        terms = []
        if cfg.alpha > 0:
            terms.append(self.task.soft_term(cfg.temperature, weight=cfg.alpha))
        if cfg.alpha < 1:
            terms.append(self.task.hard_term(weight=1.0 - cfg.alpha))
        return terms

    def stages(self, teacher, student):
        cfg = self.config
        pairs = self.layer_map(teacher, student)
        distill = kdplug.Stage("distill", self.task_terms(),
                               epochs=cfg.distill_epochs, trainable=train_all)
        if cfg.variant == "auxiliary":
            return [kdplug.Stage(
                "auxiliary",
                self.layer_terms(teacher, student, pairs) + self.task_terms(),
                epochs=cfg.distill_epochs, trainable=train_all)]
        if cfg.variant == "joint-then-task":
            joint = kdplug.Stage(
                "joint", self.layer_terms(teacher, student, pairs),
                epochs=cfg.layer_epochs, trainable=train_body,
                learning_rate=cfg.layer_learning_rate)
            return [joint, distill]
        stages = []
        for t, s in pairs:
            if cfg.lower_layers == "train":  # the reference: loss / l, lower layers train
                terms = self.layer_terms(teacher, student, [(t, s)], scale=1.0 / s)
                trainable = train_lower(s)
            else:
                terms = self.layer_terms(teacher, student, [(t, s)])
                trainable = train_block(s, embeddings=(s == 1))
            stages.append(kdplug.Stage(
                f"layer_{s}", terms, epochs=cfg.layer_epochs, trainable=trainable,
                learning_rate=cfg.layer_learning_rate))
        return stages + [distill]
