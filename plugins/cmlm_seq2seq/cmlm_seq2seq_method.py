import dataclasses
import sys
from typing import Annotated
from typing import Literal

import kdplug
from kdplug.config import Fraction
from kdplug.config import PositiveFloat
from kdplug.config import PositiveInt
from kdplug.config import Probability
from kdplug.config import Range
from kdplug.errors import ConfigError

Length = Annotated[int, Range(1, 4096)]


class CmlmSeq2SeqMethod(kdplug.Method):
    """C-MLM distillation: a BERT teacher fine-tuned as a conditional masked
    language model teaches a sequence-to-sequence student (Chen et al.
    2020, "Distilling Knowledge Learned in BERT for Text Generation", ACL).

    1. **C-MLM fine-tuning** (cached, `teacher.finetune`: epochs, batch size,
       learning rate, warm-up, early stopping): the teacher's BERT backbone
       and a keras-hub masked-LM head (`BertMaskedLM`) read `[CLS] source
       [SEP] target [SEP]` (segments 0 | 1) with target word pieces (and the
       final [SEP], the end of the sentence) replaced by [MASK] with
       probability `mask_rate`, and predict them: cross-entropy on the
       masked target positions only.
    2. **Soft labels** (cached in the teacher-output cache): for every
       target position `j`, the teacher's distribution with `j` masked,
       `passes` forward passes per example (pass `p` masks the positions
       `j mod passes = p` together), kept as the top `top_k` word pieces
       and their probabilities (float16).
    3. **Student** (`student.kind`: `seq2seq-transformer` or `seq2seq-gru`,
       on the teacher's word-piece vocabulary), trained with

       ```
       L = alpha * L_kd + (1 - alpha) * L_mle
       L_kd  = mean_j sum_k p~_jk * -log q_j(w_jk)      p~_jk ∝ p_jk^(1/T) over the top K
       L_mle = mean_j -log q_j(y_j)                      teacher-forced, gold target
       ```

       per example over its real target tokens (`TopKSoftCrossEntropy`,
       `TokenCrossEntropy`; with `temper_student`, `q` is the student's
       softmax at `T` and `L_kd` is multiplied by `T^2`).
    4. **Evaluation**: greedy or beam-search decoding of the test sources,
       corpus BLEU (keras-hub's SacreBLEU-compatible `Bleu`) and exact match
       against the references as the tokenizer writes them; teacher-forced
       token accuracy. With `mle_baseline`, the same student trained on
       `L_mle` alone is reported beside it. The distilled student is
       exported as a text-to-text `Seq2SeqGenerator` (`export/`).

    Data: `data.path` with a `source_column` and a `target_column` (any
    reader format) and the usual `split_column`; `data.sequence_length` is
    the teacher's input length (at least `max_source_length +
    max_target_length + 3`).

    Config:
        source_column, target_column: the text columns.
        max_source_length, max_target_length: word pieces kept per text.
        mask_rate: C-MLM masking probability (0.15, the paper's).
        passes: forward passes per example for the soft labels (7, the
            reference code's).
        top_k: word pieces kept per position (8, the paper's K).
        temperature: `T` of the soft labels (10, the reference's
            `--kd_temperature`).
        temper_student: also divide the student's logits by `T` and scale
            `L_kd` by `T^2` (Hinton's convention); off: the reference's
            reading, `T` only flattens the teacher's top K.
        alpha: weight of `L_kd` (0.5, the reference's `--kd_alpha`).
        label_smoothing: of `L_mle` (0.1, the reference's `label_smoothing`,
            for the distilled student and the MLE-only one alike).
        decoding: `beam` or `greedy`; beam_width: beams (5, the paper's).
        length_penalty: GNMT's alpha when choosing among finished beams
            (0.6, the reference's `-alpha`; 0: summed log probabilities).
        mle_baseline: also train the student without the teacher.

    Examples:

    ```yaml
    method:
      name: cmlm-seq2seq
      max_source_length: 48
      max_target_length: 64
      alpha: 0.5
      decoding: beam
      beam_width: 5
    student:
      kind: seq2seq-transformer
      hidden_dim: 256
    ```
    """

    name = "cmlm-seq2seq"
    description = "C-MLM BERT teacher -> seq2seq student (Chen et al. 2020)"
    default_student = {"kind": "seq2seq-transformer"}

    @dataclasses.dataclass
    class Config:
        source_column: str = "source"
        target_column: str = "target"
        max_source_length: Length = 64
        max_target_length: Length = 64
        mask_rate: Annotated[float, Range(0, 1, low_open=True)] = 0.15
        passes: PositiveInt = 7
        top_k: PositiveInt = 8
        temperature: PositiveFloat = 10.0
        temper_student: bool = False
        alpha: Probability = 0.5
        label_smoothing: Fraction = 0.1
        decoding: Literal["beam", "greedy"] = "beam"
        beam_width: PositiveInt = 5
        length_penalty: Annotated[float, Range(0)] = 0.6
        mle_baseline: bool = True

        def __post_init__(self):
            if self.source_column == self.target_column:
                raise ConfigError("must differ from source_column",
                                  field="target_column", value=self.target_column)

    @classmethod
    def check_config(cls, config):
        """Checks across sections; raises `ConfigError` naming the field."""
        cfg, file = config.method_config, config.file
        if config.teacher.finetune is None:
            raise ConfigError(
                "cmlm-seq2seq fine-tunes the teacher as a conditional masked LM "
                "first; add a teacher.finetune section (epochs, learning_rate, ...)",
                file, "teacher.finetune")
        needed = cfg.max_source_length + cfg.max_target_length + 3
        if config.data.sequence_length < needed:
            raise ConfigError(
                f"the teacher reads [CLS] source [SEP] target [SEP]: at least "
                f"max_source_length + max_target_length + 3 = {needed} positions",
                file, "data.sequence_length", config.data.sequence_length)
        if not getattr(_student_kind(config), "seq2seq", False):
            raise ConfigError(
                "cmlm-seq2seq trains a sequence-to-sequence student: "
                "seq2seq-transformer or seq2seq-gru", file, "student.kind",
                config.student.name)
        for field, value in (("augment", config.augment),
                             ("teacher.pipeline", config.teacher.pipeline),
                             ("analysis", config.analysis)):
            if value:
                raise ConfigError(f"cmlm-seq2seq does not use {field}", file,
                                  field, value)
        from kdplug_plugins.cmlm_seq2seq.seq2seq_data import Seq2SeqData

        Seq2SeqData.read(config.data, cfg.source_column, cfg.target_column,
                         config.resolve_path, config.seed)

    def data_sources(self, config):
        """None for the core's reader (it reads labelled classification
        rows); `check_config` reads the source/target pairs instead."""
        return []

    def terms(self, alpha):
        """`[topk_soft_ce (alpha), token_ce (1 - alpha)]`, without the
        terms whose weight is 0."""
        from kdplug_plugins.cmlm_seq2seq.token_cross_entropy import TokenCrossEntropy
        from kdplug_plugins.cmlm_seq2seq.top_k_soft_cross_entropy import (
            TopKSoftCrossEntropy)

        cfg = self.config
        terms = []
        if alpha > 0:
            terms.append(TopKSoftCrossEntropy(cfg.temperature, cfg.temper_student,
                                              weight=alpha))
        if alpha < 1:
            terms.append(TokenCrossEntropy(weight=1.0 - alpha,
                                           label_smoothing=cfg.label_smoothing))
        return terms

    def build_student(self, teacher, student_kind, num_classes):
        """The seq2seq student on `num_classes` word pieces (the teacher's
        vocabulary) and the configured lengths."""
        cfg = self.config
        return student_kind.build_seq2seq(num_classes, cfg.max_source_length,
                                          cfg.max_target_length)

    def stages(self, teacher, student):
        """One stage, `cmlm_kd`: the batches carry the teacher's top-K soft
        labels (`teacher/topk_ids`, `teacher/topk_probs`; see
        `CmlmSeq2SeqRunner`)."""
        return [kdplug.Stage("cmlm_kd", self.terms(self.config.alpha))]

    @property
    def runner(self):
        """`CmlmSeq2SeqRunner`: C-MLM fine-tuning, soft labels, students,
        decoding and BLEU (not the single-task classification flow)."""
        from kdplug_plugins.cmlm_seq2seq.cmlm_seq2seq_runner import CmlmSeq2SeqRunner

        return CmlmSeq2SeqRunner


def _student_kind(config):
    """The `StudentKind` class whose `Config` parsed the `student:` section."""
    cls = type(config.student_config)
    module = sys.modules.get(cls.__module__)
    return getattr(module, cls.__qualname__.split(".")[0], None)
