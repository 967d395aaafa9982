import dataclasses

import kdplug


class BiLstmMethod(kdplug.Method):
    """Tang et al. (2019): `alpha * hard CE + (1 - alpha) * logit MSE`.

    "Distilling Task-Specific Knowledge from BERT into Simple Neural
    Networks": a single-layer BiLSTM learns the teacher's logits with a mean
    squared error (`LogitMSE`) and the gold labels with cross-entropy
    (`HardLabelCrossEntropy`; unlabelled examples, e.g. augmented ones,
    contribute zero to it). One `distill` stage.

    The student may read the teacher's WordPiece ids (`student.input:
    token_ids`) or its own word ids (`input: word_ids`, with
    `vocabulary_size` the word vocabulary's cap): a `kdplug.data.WordEncoder`
    built from the training texts adds `word_ids` / `word_padding_mask` to
    every batch (`kdplug.data.word_encoder.word_dataset`), so the teacher and
    the student see the same examples (see
    docs/methods-bilstm-mobilebert.md for the runner step this needs).

    Config:
        alpha: weight of the hard-label loss; the logit MSE gets `1 - alpha`.

    Examples:

    ```yaml
    method:
      name: bilstm
      alpha: 0.0
    student:
      kind: bilstm
      input: word_ids
      vocabulary_size: 20000
    ```
    """

    name = "bilstm"
    description = "Tang et al. 2019: BiLSTM student, logit MSE + hard labels"
    default_student = {"kind": "bilstm"}

    @dataclasses.dataclass
    class Config:
        alpha: float = 0.5

        def __post_init__(self):
            if not 0.0 <= self.alpha <= 1.0:
                raise ValueError(f"alpha must be in [0, 1], got {self.alpha}")

    def stages(self, teacher, student):
        from kdplug.terms import HardLabelCrossEntropy
        from kdplug.terms import LogitMSE

        alpha = self.config.alpha
        terms = []
        if alpha < 1.0:
            terms.append(LogitMSE(weight=1.0 - alpha))
        if alpha > 0.0:
            terms.append(HardLabelCrossEntropy(weight=alpha))
        return [kdplug.Stage("distill", terms)]
