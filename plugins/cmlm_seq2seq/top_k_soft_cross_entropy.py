import keras
from keras import ops

from kdplug import keys
from kdplug.terms import Term
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk


@keras.saving.register_keras_serializable(package="kdplug_cmlm_seq2seq")
class TopKSoftCrossEntropy(Term):
    """Soft cross-entropy of a sequence student against a teacher's top-K
    word distributions, per target token (Chen et al. 2020, "Distilling
    Knowledge Learned in BERT for Text Generation", the `L_bidi` term).

    For example `i`, target position `j` (a real label, `labels_ij >= 0`)
    with the teacher's top-K word pieces `w_1..w_K` and probabilities
    `p_1..p_K` (batch features `teacher/topk_ids`, `teacher/topk_probs`),
    student logits `s_ij` and temperature `T`:

    ```
    p~_k     = p_k^(1/T) / sum_l p_l^(1/T)          (renormalised over the K)
    ce_ij    = - sum_k p~_k * log softmax(s_ij / T')[w_k]
    loss_i   = c * sum_j ce_ij * m_ij / sum_j m_ij   (m_ij = labels_ij >= 0)
    ```

    `p^(1/T)` renormalised over the K is `softmax(z / T)` over the teacher's
    top-K logits `z` (the probabilities differ from `exp(z)` by one factor per
    position), so storing probabilities keeps the reference code's tempered
    top-K logits exactly. Two conventions for the student:

    - `temper_student=True` (Hinton et al. 2015, as kdplug's
      `SoftTargetCrossEntropy`): `T' = T` and `c = T^2`, which keeps the
      gradient's size comparable across temperatures (the gradient of
      `ce` in the logits is `(q - p~) / T`).
    - `temper_student=False`: `T' = 1`, `c = 1`: the temperature only
      flattens the teacher's top-K targets and the student's ordinary
      log-probabilities are trained on them (how the released C-MLM
      recipe's `--kd_temperature 10` reads: a large `T` over only K words).

    Words outside the teacher's top K get no target mass (the K are
    renormalised, as the paper does); padding positions (label `-1`) and
    positions whose K probabilities are all zero contribute nothing, and
    each example's loss is the mean over its real target tokens.

    The temperature is a non-trainable variable, so `training.schedules`
    can change it (`variable: temperature`).

    Args:
        temperature: float. `T` (> 0).
        temper_student: bool. See above.
        weight: float. Weight in the total loss (`alpha`).
        tap: str. The student's logits tap.

    Examples:

    ```python
    term = TopKSoftCrossEntropy(temperature=10.0, weight=0.5)
    per_example = term({"topk_ids": ids, "topk_probs": probs},
                       {"logits": logits}, {"labels": labels})
    ```
    """

    teacher_taps = sk.TOPK_TAPS
    student_taps = ("logits",)

    def __init__(self, temperature=1.0, temper_student=True, weight=1.0,
                 tap="logits", name=None, **kwargs):
        super().__init__(weight=weight, name=name or "topk_soft_ce", **kwargs)
        if temperature <= 0:
            raise ValueError(f"temperature must be > 0, got {temperature}")
        self.initial_temperature = float(temperature)
        self.temper_student = bool(temper_student)
        self.tap = tap
        self.temperature = self.add_weight(
            shape=(), trainable=False, name="temperature",
            initializer=keras.initializers.Constant(self.initial_temperature))

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        temp = ops.cast(self.temperature, "float32")
        ids = ops.cast(teacher[sk.TOPK_IDS], "int32")
        probs = ops.cast(teacher[sk.TOPK_PROBS], "float32")
        # p^(1/T) = exp(log p / T), zero where p is zero (padding)
        positive = ops.greater(probs, 0.0)
        powered = ops.where(
            positive, ops.exp(ops.log(ops.where(positive, probs, 1.0)) / temp), 0.0)
        total = ops.sum(powered, axis=-1, keepdims=True)
        targets = powered / ops.maximum(total, 1e-30)
        logits = ops.cast(student[self.tap], "float32")
        if self.temper_student:
            logits = logits / temp
        log_q = ops.log_softmax(logits, axis=-1)
        picked = ops.take_along_axis(log_q, ids, axis=-1)
        per_token = -ops.sum(targets * picked, axis=-1)
        mask = ops.cast(ops.greater_equal(batch[keys.LABELS], 0), "float32")
        mask = mask * ops.cast(ops.greater(total[..., 0], 0.0), "float32")
        loss = ops.sum(per_token * mask, axis=-1) / ops.maximum(
            ops.sum(mask, axis=-1), 1.0)
        if self.temper_student:
            loss = loss * temp * temp
        return loss

    def get_config(self):
        config = super().get_config()
        config.update({"temperature": self.initial_temperature,
                       "temper_student": self.temper_student, "tap": self.tap})
        return config
