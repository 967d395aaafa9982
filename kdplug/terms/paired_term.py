"""The base of terms that compare (teacher tap, student tap) pairs."""

from keras import ops

from kdplug.terms.pairs import check_pairs
from kdplug.terms.term import Term


class PairedTerm(Term):
    """A `Term` over a list of `(teacher_tap, student_tap)` pairs.

    Validates the pairs (`check_pairs`), stores them as `self.pairs`, requires
    the pairs' taps from both models and saves them under the `"pairs"`
    config key. Subclasses implement `call` and add their own config.

    Args:
        pairs: list of `(teacher_tap, student_tap)`.
        weight: float. Weight in the total loss.
        name: str. The term's name.

    Examples:

    ```python
    class L1Hidden(PairedTerm):
        def call(self, teacher, student, batch):
            return sum(ops.mean(ops.abs(teacher[t] - student[s]), (1, 2))
                       for t, s in self.pairs)
    ```
    """

    def __init__(self, pairs, weight=1.0, name=None, **kwargs):
        super().__init__(weight=weight, name=name, **kwargs)
        self.pairs = check_pairs(pairs, type(self).__name__)

    def required_teacher_taps(self):
        return {t for t, _ in self.pairs}

    def required_student_taps(self):
        return {s for _, s in self.pairs}

    def float_pairs(self, teacher, student):
        """Yields `(t_name, s_name, t, s)` per pair, both taps cast to float32."""
        for t_name, s_name in self.pairs:
            yield (t_name, s_name, ops.cast(teacher[t_name], "float32"),
                   ops.cast(student[s_name], "float32"))

    def get_config(self):
        config = super().get_config()
        config.update({"pairs": [list(p) for p in self.pairs]})
        return config
