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
    contributes zero. By default every width-mismatched student tap gets its
    own `Projection` (one `W_h` per layer). With `shared_projection` one
    `Projection` maps every width-mismatched pair instead, as the TinyBERT
    reference code does (a single `fit_dense` applied to the embeddings and
    to every layer's hidden states); pass the same layer to an
    `EmbeddingMSE` to share it with the embedding loss too. Per-layer
    projections are built here, at construction, from
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
        use_bias: bool. Whether the projections have a bias (per-layer
            projections only; a shared projection brings its own).
        shared_projection: None (one projection per width-mismatched
            student tap) or a `Projection` (or its serialized config) used
            by every width-mismatched pair; its `(output_dim, input_dim)`
            must be each such pair's `(teacher_width, student_width)`.
            Saved in `get_config()`; inside a `.keras` file the layer stays
            shared between the terms that hold it (Keras' object sharing).
            Configs saved without the key load per-layer, as before.
        name: str. Defaults to `"hidden_mse"`.

    Examples:

    ```python
    term = ProjectedHiddenMSE([("hidden/4", "hidden/2")], widths=[(16, 8)])
    per_example = term({"hidden/4": t}, {"hidden/2": s},
                       {"padding_mask": mask})
    term = ProjectedHiddenMSE.from_models(teacher, student,
                                          [("hidden/4", "hidden/2")])
    fit_dense = Projection(output_dim=16, input_dim=8, name="fit_dense")
    term = ProjectedHiddenMSE([("hidden/2", "hidden/1"), ("hidden/4", "hidden/2")],
                              widths=[(16, 8), (16, 8)],
                              shared_projection=fit_dense)
    ```
    """

    default_name = "hidden_mse"

    def __init__(self, pairs, widths, weight=1.0, use_bias=True,
                 shared_projection=None, name=None, **kwargs):
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
        if isinstance(shared_projection, dict):
            shared_projection = keras.saving.deserialize_keras_object(
                shared_projection)
        if shared_projection is not None and not isinstance(
                shared_projection, Projection):
            raise KdplugError(
                f"{type(self).__name__}: shared_projection must be a "
                f"Projection, got {type(shared_projection).__name__}")
        self.shared_projection = shared_projection
        # Only width-mismatched pairs get a projection (keyed by student
        # tap); with a shared projection they all use that one.
        self.projections = {}
        self._shared_taps = set()
        for (_, s_name), (t_width, s_width) in zip(self.pairs, self.widths):
            if t_width != s_width and shared_projection is not None:
                got = (shared_projection.output_dim, shared_projection.input_dim)
                if got != (t_width, s_width):
                    raise KdplugError(
                        f"{type(self).__name__}: the shared projection maps "
                        f"{got[1]} -> {got[0]} but pair {s_name!r} needs "
                        f"{s_width} -> {t_width}; use one projection per layer")
                self._shared_taps.add(s_name)
            elif t_width != s_width and s_name not in self.projections:
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
        if student_tap in self._shared_taps:
            projection = self.shared_projection
        else:
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
        if self.shared_projection is not None:
            # The layer itself, not its serialized dict: Keras serializes it
            # once the whole config is walked, and only then can the second
            # term's copy be marked as the same object (`shared_object_id`),
            # which `load_model` turns back into one shared layer.
            config["shared_projection"] = self.shared_projection
        return config
