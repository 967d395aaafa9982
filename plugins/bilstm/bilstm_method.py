import dataclasses
from typing import Literal

import kdplug
from kdplug.config import Probability


class BiLstmMethod(kdplug.Method):
    """Tang et al. (2019): `alpha * hard CE + (1 - alpha) * logit MSE`.

    "Distilling Task-Specific Knowledge from BERT into Simple Neural
    Networks": a single-layer BiLSTM learns the teacher's logits with a mean
    squared error (`LogitMSE`) and the gold labels with cross-entropy
    (`HardLabelCrossEntropy`). One `distill` stage:

    ```
    loss_i = alpha * -log softmax(s_i)[y_i] + (1 - alpha) * mean_c (t_ic - s_ic)^2
    ```

    Augmented transfer-set examples (label `-1`) take the teacher's argmax
    as `y_i` (`unlabelled: teacher_argmax`, as the paper's reference code
    labels its transfer set), so the hard term keeps its share of the loss
    however large the transfer set; `unlabelled: skip` gives them no hard
    term (kdplug 0.1's behaviour; the hard term's share then shrinks to
    1/(1+n) of the batch with `n` augmented copies per example).

    The student may read the teacher's WordPiece ids (`student.input:
    token_ids`) or its own word ids (`input: word_ids`, with
    `vocabulary_size` the word vocabulary's cap): a `kdplug.data.WordEncoder`
    built from the training texts adds `word_ids` / `word_padding_mask` to
    every batch (`kdplug.data.word_encoder.word_dataset`), so the teacher and
    the student see the same examples (see
    docs/methods/bilstm.md for the runner step this needs).

    Config:
        alpha: weight of the hard-label loss; the logit MSE gets `1 - alpha`.
        unlabelled: `teacher_argmax` (default) or `skip`: the hard label of
            examples without a gold label (see above).

    Examples:

    ```yaml
    method:
      name: bilstm
      alpha: 0.5
      unlabelled: teacher_argmax   # skip: kdplug 0.1's behaviour
    student:
      kind: bilstm
      input: word_ids
      vocabulary_size: 20000
    ```
    """

    name = "bilstm"
    description = "Tang et al. 2019: BiLSTM student, logit MSE + hard labels"
    default_student = {"kind": "bilstm"}
    task_kinds = ("classification", "regression", "multi_label")

    @dataclasses.dataclass
    class Config:
        alpha: Probability = 0.5
        unlabelled: Literal["teacher_argmax", "skip"] = "teacher_argmax"

    def stages(self, teacher, student):
        from kdplug.terms import LogitMSE

        alpha = self.config.alpha
        terms = []
        if alpha < 1.0:
            terms.append(LogitMSE(weight=1.0 - alpha))
        if alpha > 0.0:
            terms.append(self.task.hard_term(
                weight=alpha, unlabelled=self.config.unlabelled))
        return [kdplug.Stage("distill", terms)]
