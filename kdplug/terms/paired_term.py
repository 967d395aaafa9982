"""The base of terms that compare (teacher tap, student tap) pairs."""

from keras import ops

from kdplug.terms.pairs import check_pairs
from kdplug.terms.pairs import check_widths
from kdplug.terms.pairs import masked_token_mean
from kdplug.terms.pairs import padding_mask
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

    def token_mean_over_pairs(self, teacher, student, batch, per_token):
        """`sum_pairs sum_t m_it f(T_i, S_i)_t / sum_t m_it` per example: the
        per-token values `per_token(t, s)` `(batch, seq)` of every pair of
        equally wide `(batch, seq, width)` taps, averaged over each example's
        valid tokens (`batch["padding_mask"]`; zero without one) and summed
        over the pairs: the body of every per-token hidden-state term."""
        mask = padding_mask(batch, self.name)
        valid = ops.sum(mask, axis=-1)
        total = 0.0
        for t_name, s_name, t, s in self.float_pairs(teacher, student):
            check_widths(t, s, t_name, s_name, self.name)
            total = total + masked_token_mean(per_token(t, s), mask, valid)
        return total

    def get_config(self):
        config = super().get_config()
        config.update({"pairs": [list(p) for p in self.pairs]})
        return config
