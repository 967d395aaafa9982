import dataclasses
from typing import Annotated
from typing import Literal
from typing import Optional

import kdplug
from kdplug.config import NonNegativeFloat
from kdplug.config import PositiveFloat
from kdplug.config import PositiveInt
from kdplug.config import Range
from kdplug.data import TextCorpus
from kdplug.errors import KdplugError

MODES = ("task", "general", "general_then_task")


class DistilBertMethod(kdplug.Method):
    """DistilBERT (Sanh et al. 2019): soft targets + cosine hidden + MLM.

    The student is the teacher with every other layer, taken from the
    *pre-trained* teacher (before `teacher.finetune`) with a fresh
    classifier: the default `truncated` student with `layers: every_other`,
    `init: pretrained`, as the paper initialises it "from the teacher by
    taking one layer out of two" of pre-trained BERT (`student.init:
    teacher` starts from the fine-tuned teacher instead). The paper pre-trains it
    with `5 * soft CE(T) over the teacher's MLM distribution + 2 * MLM +
    1 * cosine(last hidden states)`. kdplug's teachers are *classifiers*
    with no MLM head, so that soft term over the vocabulary is not
    available; the modes are:

    - `task` (one stage, labelled task data): `soft_weight * soft CE(T)` on
      the teacher's class logits `+ cosine_weight * cosine(last hidden)`
      `+ hard_weight * hard CE` (when `hard_weight > 0`).
    - `general` (one stage, no labels): `mlm_weight * MLM + cosine_weight *
      cosine(last hidden)`, from the *pre-trained* teacher
      (`general_teacher: pretrained`, the paper's distillation of
      pre-trained BERT) on `general_corpus` (e.g. kdplug's
      `data/general_english.txt`) or, without one, on the training texts
      with their labels ignored. The student's MLM head is a training-only
      branch owned by the loss term (tied to the student's token
      embedding), so the exported classifier never contains it. The
      classifier head is not trained in this stage.
    - `general_then_task`: the `general` stage, then the `task` stage.

    Both teacher and student read the same (masked) inputs in the general
    stage, as in DistilBERT.

    Config:
        mode: `task`, `general` or `general_then_task`.
        temperature: softmax temperature T of the soft loss (paper: 2).
        soft_weight: weight of the soft loss (paper: 5).
        cosine_weight: weight of the cosine loss (paper: 1).
        mlm_weight: weight of the MLM loss (paper: 2).
        hard_weight: weight of the gold-label cross-entropy in `task`
            (0 turns it off).
        mask_rate: fraction of tokens masked for MLM (BERT: 0.15).
        max_predictions: masked positions per example (None:
            `ceil(sequence_length * mask_rate)`).
        general_epochs: epochs of the general stage (None:
            `training.epochs`).
        general_corpus: the general stage's texts (a text file, one text a
            line, or a table's `data.text_column`), relative to the config
            file; null: the task's training texts.
        general_teacher: `pretrained` (the paper) or `finetuned` (kdplug
            0.2): which teacher the general stage distils from.

    Examples:

    ```yaml
    method:
      name: distilbert
      mode: general_then_task
      temperature: 2.0
    ```
    """

    name = "distilbert"
    description = "DistilBERT: soft CE + cosine hidden (+ MLM on unlabelled text)"
    default_student = {"kind": "truncated", "layers": "every_other",
                       "init": "pretrained"}
    task_kinds = ("classification", "regression", "multi_label", "token_classification",
                  "extractive_qa")
    path_fields = ("general_corpus",)

    @dataclasses.dataclass
    class Config:
        mode: Literal["task", "general", "general_then_task"] = "task"
        temperature: PositiveFloat = 2.0
        soft_weight: NonNegativeFloat = 5.0
        cosine_weight: NonNegativeFloat = 1.0
        mlm_weight: NonNegativeFloat = 2.0
        hard_weight: NonNegativeFloat = 0.0
        mask_rate: Annotated[float, Range(0, 1, low_open=True)] = 0.15
        max_predictions: Optional[PositiveInt] = None
        general_epochs: Optional[PositiveInt] = None
        general_corpus: Optional[str] = None
        general_teacher: Literal["pretrained", "finetuned"] = "pretrained"

    def hidden_pair(self, teacher, student):
        """The `(teacher_tap, student_tap)` of the cosine loss: last layers."""
        return (f"hidden/{teacher.num_layers}", f"hidden/{student.num_layers}")

    def stages(self, teacher, student):
        mode = self.config.mode
        stages = []
        if mode in ("general", "general_then_task"):
            stages.append(self.general_stage(teacher, student))
        if mode in ("task", "general_then_task"):
            stages.append(self.task_stage(teacher, student))
        return stages

    def task_stage(self, teacher, student):
        from kdplug.terms import CosineHidden
        cfg = self.config
        terms = [self.task.soft_term(cfg.temperature, weight=cfg.soft_weight)]
        if cfg.cosine_weight > 0:
            terms.append(
                CosineHidden([self.hidden_pair(teacher, student)],
                             weight=cfg.cosine_weight)
            )
        if cfg.hard_weight > 0:
            terms.append(self.task.hard_term(weight=cfg.hard_weight))
        return kdplug.Stage("task", terms, data="task")

    def general_stage(self, teacher, student):
        from kdplug.terms import CosineHidden
        from kdplug.terms import MaskedLMLoss

        cfg = self.config
        embedding = getattr(getattr(student, "backbone", None), "token_embedding", None)
        if embedding is None:
            raise KdplugError(
                "distilbert's general stage needs a BERT-like student with "
                "backbone.token_embedding (for the tied MLM head)"
            )
        terms = []
        if cfg.mlm_weight > 0:
            terms.append(
                MaskedLMLoss(
                    f"hidden/{student.num_layers}",
                    token_embedding=embedding,
                    weight=cfg.mlm_weight,
                    mask_rate=cfg.mask_rate,
                    max_predictions=cfg.max_predictions,
                )
            )
        if cfg.cosine_weight > 0:
            terms.append(
                CosineHidden([self.hidden_pair(teacher, student)],
                             weight=cfg.cosine_weight)
            )
        if not terms:
            raise KdplugError(
                "distilbert's general stage needs mlm_weight > 0 or "
                "cosine_weight > 0"
            )
        return kdplug.Stage(
            "general", terms, epochs=cfg.general_epochs,
            data=TextCorpus.stage_data(cfg.general_corpus, "method.general_corpus"),
            teacher=cfg.general_teacher)
