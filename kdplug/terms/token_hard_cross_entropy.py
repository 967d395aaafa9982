import keras
from keras import ops

from kdplug import keys
from kdplug.terms.term import Term
from kdplug.terms.token_positions import mean_over_labelled


@keras.saving.register_keras_serializable(package="kdplug")
class TokenHardCrossEntropy(Term):
    """Cross-entropy of per-token logits against the gold word labels.

    Reads the student's `(batch, seq, C)` logits (a
    `BertClassifier(per_token=True)`) and the batch's `(batch, seq)` labels:
    a class id on the first word piece of every word, `-1` elsewhere
    (padding, [CLS]/[SEP], continuation pieces;
    `kdplug.data.token_alignment`). Per example, with `P` its labelled
    positions and `y_j` their labels:

    ```
    loss = 1/|P| * sum_{j in P} -log softmax(s_j)[y_j]
    ```

    and 0 for an example with no labelled position (e.g. an augmented
    example without gold labels: all `-1`). No teacher output is read.
    With label smoothing `e` the target is `(1 - e) * onehot(y_j) + e / C`:

    ```
    ce_j = (1 - e) * -log softmax(s_j)[y_j] + e * mean_c -log softmax(s_j)[c]
    ```

    Args:
        weight: float. Weight in the total loss.
        tap: str. The student's per-token logits tap.
        label_smoothing: float in [0, 1). `e` above (0: none).

    Examples:

    ```python
    term = TokenHardCrossEntropy(weight=0.5)
    per_example = term({}, {"logits": s}, {"labels": labels})
    # s: (batch, seq, C); labels: (batch, seq), -1 where not labelled
    ```
    """

    def __init__(self, weight=1.0, tap="logits", name=None, label_smoothing=0.0,
                 **kwargs):
        super().__init__(weight=weight, name=name or "token_hard_ce", **kwargs)
        if not 0.0 <= label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {label_smoothing}")
        self.tap = tap
        self.label_smoothing = float(label_smoothing)

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        logits = ops.cast(student[self.tap], "float32")
        labels = ops.cast(batch[keys.LABELS], "int32")
        ce = keras.losses.sparse_categorical_crossentropy(
            ops.maximum(labels, 0), logits, from_logits=True)
        if self.label_smoothing:
            uniform = -ops.mean(ops.log_softmax(logits, axis=-1), axis=-1)
            ce = (1.0 - self.label_smoothing) * ce + self.label_smoothing * uniform
        return mean_over_labelled(ce, batch)

    def get_config(self):
        config = super().get_config()
        config.update({"tap": self.tap, "label_smoothing": self.label_smoothing})
        return config
