import keras
from keras import ops

from kdplug.terms import Term


@keras.saving.register_keras_serializable(package="kdplug")
class BranchSelfDistillation(Term):
    """FastBERT's self-distillation loss (Liu et al., 2020).

    Per example: `sum_i KL(p_final || p_i)` over the exit branches, with
    `p_final = softmax(final logits)` and `p_i = softmax(branch_logits/<i>)`;
    `KL(p || q) = sum_c p_c (log p_c - log q_c)`. Labels are not used, so
    unlabelled text works.

    Both distributions come from the *student* taps: in FastBERT the teacher
    is the model's own frozen final classifier, so the term needs no teacher
    taps (the `Distiller` then neither runs nor caches a teacher) and
    `EarlyExitBertClassifier` runs its frozen part in inference mode. The
    final logits are wrapped in `stop_gradient`, so only the branches learn
    even if the backbone were left trainable.

    Args:
        branches: the branch tap names, e.g. `["branch_logits/1", ...]`.
        target: the tap holding the final classifier's logits.
        weight: float. Weight in the total loss.

    Examples:

    ```python
    term = BranchSelfDistillation(student.branch_tap_names())
    per_example = term({}, student.taps(x, term.required_student_taps()), batch)
    ```
    """

    def __init__(self, branches, target="logits", weight=1.0, name=None,
                 **kwargs):
        super().__init__(weight=weight, name=name or "self_distill", **kwargs)
        self.branches = tuple(branches)
        if not self.branches:
            raise ValueError("BranchSelfDistillation needs at least one branch")
        self.target = target

    def required_student_taps(self):
        return {self.target, *self.branches}

    def call(self, teacher, student, batch):
        t = ops.stop_gradient(ops.cast(student[self.target], "float32"))
        log_p = ops.log_softmax(t, axis=-1)
        p = ops.exp(log_p)
        total = 0.0
        for name in self.branches:
            log_q = ops.log_softmax(ops.cast(student[name], "float32"), axis=-1)
            total = total + ops.sum(p * (log_p - log_q), axis=-1)
        return total

    def get_config(self):
        config = super().get_config()
        config.update({"branches": list(self.branches), "target": self.target})
        return config
