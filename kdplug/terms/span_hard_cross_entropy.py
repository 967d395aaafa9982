import keras

from kdplug.terms.span_positions import labels_of
from kdplug.terms.span_positions import span_cross_entropy
from kdplug.terms.term import Term


@keras.saving.register_keras_serializable(package="kdplug")
class SpanHardCrossEntropy(Term):
    """Cross-entropy of the student's answer start and end against the gold
    span (extractive question answering; BERT's SQuAD loss).

    Reads the student's `(batch, seq, 2)` logits (start, end; a
    `BertClassifier(per_token=True)` with 2 outputs) and the batch's
    `(batch, 4)` window labels: gold start token, end token, window id and
    length (`kdplug.tasks.ExtractiveQATask`; start = end = 0, the [CLS]
    token, when the answer is not in the window). Per window, with `s`, `e`
    the gold tokens and positions past the window's length left out:

    ```
    loss = (-log softmax(start)[s] - log softmax(end)[e]) / 2
    ```

    No teacher output is read.

    Args:
        weight: float. Weight in the total loss.
        tap: str. The student's per-token logits tap.

    Examples:

    ```python
    term = SpanHardCrossEntropy(weight=0.5)
    per_example = term({}, {"logits": s}, {"labels": labels})
    # s: (batch, seq, 2); labels: (batch, 4) start, end, window, length
    ```
    """

    def __init__(self, weight=1.0, tap="logits", name=None, **kwargs):
        super().__init__(weight=weight, name=name or "span_hard_ce", **kwargs)
        self.tap = tap

    def required_student_taps(self):
        return {self.tap}

    def call(self, teacher, student, batch):
        return span_cross_entropy(labels_of(batch), student[self.tap])

    def get_config(self):
        config = super().get_config()
        config.update({"tap": self.tap})
        return config
