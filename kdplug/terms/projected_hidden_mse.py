import keras
from keras import ops

from kdplug.errors import KdplugError
from kdplug.mapping.projection import Projection
from kdplug.mapping.projection_builder import check_tap_pair
from kdplug.terms.paired_term import PairedTerm
from kdplug.terms.pairs import check_pairs
from kdplug.terms.pairs import masked_token_mean
from kdplug.terms.pairs import padding_mask


@keras.saving.register_keras_serializable(package="kdplug")
class ProjectedHiddenMSE(PairedTerm):
    """TinyBERT's hidden-state loss `MSE(H_S W_h, H_T)` (Jiao et al. 2020).

    For every `(teacher_tap, student_tap)` pair of `(batch, seq, width)`
    taps the student's states are first mapped to the teacher's width by a
    learned `Projection` `W_h` (only where the widths differ; equal widths
    are compared directly). The loss of example `i` is the squared error
    averaged over the teacher's hidden units and over the example's valid
    tokens (`batch["padding_mask"] == 1`), summed over the pairs:

    `loss_i = sum_pairs sum_l m_il mean_n ((S_il W_h)_n - T_iln)^2 / sum_l m_il`

    Padding tokens never contribute; an example without a valid token
    contributes zero. The projections are built here, at construction, from
    the declared widths: they exist before `fit()`, train with the student
    (the Distiller's trainable variables include its terms'), are saved
    with a Distiller and rebuilt from `get_config()` (pairs and widths) when
    it is loaded, and are never part of the exported student.

    Args:
        pairs: list of `(teacher_tap, student_tap)`, e.g.
            `[("hidden/2", "hidden/1"), ("hidden/4", "hidden/2")]`.
        widths: list aligned with `pairs` of `(teacher_width, student_width)`
            (`model.tap_width(tap)`); see `from_models()`.
        weight: float. Weight in the total loss.
        use_bias: bool. Whether the projections have a bias.
        name: str. Defaults to `"hidden_mse"`.

    Examples:

    ```python
    term = ProjectedHiddenMSE([("hidden/4", "hidden/2")], widths=[(16, 8)])
    per_example = term({"hidden/4": t}, {"hidden/2": s},
                       {"padding_mask": mask})
    term = ProjectedHiddenMSE.from_models(teacher, student,
                                          [("hidden/4", "hidden/2")])
    ```
    """

    default_name = "hidden_mse"

    def __init__(self, pairs, widths, weight=1.0, use_bias=True, name=None,
                 **kwargs):
        super().__init__(pairs, weight=weight, name=name or self.default_name,
                         **kwargs)
        if len(widths) != len(self.pairs):
            raise KdplugError(
                f"{type(self).__name__}: got {len(widths)} widths for "
                f"{len(self.pairs)} pairs; give one (teacher_width, "
                "student_width) per pair"
            )
        self.widths = tuple((int(t), int(s)) for t, s in widths)
        self.use_bias = bool(use_bias)
        # Only width-mismatched pairs get a projection (keyed by student tap).
        self.projections = {}
        for (_, s_name), (t_width, s_width) in zip(self.pairs, self.widths):
            if t_width != s_width and s_name not in self.projections:
                self.projections[s_name] = Projection(
                    t_width, s_width, use_bias=self.use_bias,
                    name=f"projection_{s_name.replace('/', '_')}",
                )

    @classmethod
    def from_models(cls, teacher, student, pairs, **kwargs):
        """Builds the term with widths read from `tap_width()` of both models."""
        pairs = check_pairs(pairs, cls.__name__)
        widths = []
        for t_name, s_name in pairs:
            check_tap_pair(teacher, student, t_name, s_name)
            widths.append((teacher.tap_width(t_name), student.tap_width(s_name)))
        return cls(pairs, widths, **kwargs)

    def project(self, student_tap, states):
        """The student's `states` at the teacher's width (float32)."""
        projection = self.projections.get(student_tap)
        if projection is not None:
            states = projection(states)
        return ops.cast(states, "float32")

    def call(self, teacher, student, batch):
        mask = padding_mask(batch, self.name)
        valid = ops.sum(mask, axis=-1)
        total = 0.0
        for (t_name, s_name), (t_width, _) in zip(self.pairs, self.widths):
            t = ops.cast(teacher[t_name], "float32")
            s = self.project(s_name, student[s_name])
            if t.shape[-1] is not None and t.shape[-1] != t_width:
                raise KdplugError(
                    f"{self.name}: teacher tap {t_name!r} has width "
                    f"{t.shape[-1]}, the term was built for {t_width}"
                )
            per_token = ops.mean(ops.square(s - t), axis=-1)
            total = total + masked_token_mean(per_token, mask, valid)
        return total

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "widths": [list(w) for w in self.widths],
                "use_bias": self.use_bias,
            }
        )
        return config
