from kdplug.errors import KdplugError
from kdplug.plugin.configurable import Configurable

EMBEDDINGS = 0
"""Layer index 0 stands for the embedding output (tap `embeddings`)."""


class LayerMapping(Configurable):
    """Which teacher layer each student layer learns from.

    A strategy (registered with the `kdplug_register_mappings` hook) sets
    `name`, a dataclass `Config` and implements `layer_pairs(N, M)`, returning
    1-based `(teacher_layer, student_layer)` pairs for a teacher of depth `N`
    and a student of depth `M` (0 is the embedding layer). `resolve()` and
    `tap_pairs()` apply it to real models and check every index, so a bad
    mapping fails before training with a message naming both models.

    Args:
        config: an instance of the subclass's `Config`.

    Examples:

    ```python
    mapping = UniformMapping()
    mapping.layer_pairs(6, 3)  # [(2, 1), (4, 2), (6, 3)]
    mapping.tap_pairs(teacher, student, kinds=("hidden", "attention"))
    # [("hidden/2", "hidden/1"), ("attention/2", "attention/1"), ...]
    ```
    """

    def layer_pairs(self, num_teacher_layers, num_student_layers):
        raise NotImplementedError(f"{type(self).__name__}.layer_pairs()")

    def resolve(self, teacher, student):
        """Checked `(teacher_layer, student_layer)` pairs for two models."""
        n = _depth(teacher, "teacher")
        m = _depth(student, "student")
        pairs = [(int(t), int(s)) for t, s in self.layer_pairs(n, m)]
        for t, s in pairs:
            if not 0 <= s <= m:
                raise KdplugError(
                    f"layer mapping {self.name!r} pairs teacher layer {t} with "
                    f"student layer {s}, which does not exist: the student "
                    f"({_describe(student)}) has {m} layers (1..{m}; 0 is the "
                    "embeddings)"
                )
            if not 0 <= t <= n:
                raise KdplugError(
                    f"layer mapping {self.name!r} pairs student layer {s} with "
                    f"teacher layer {t}, which does not exist: the teacher "
                    f"({_describe(teacher)}) has {n} layers (1..{n}; 0 is the "
                    "embeddings)"
                )
        return pairs

    def tap_pairs(self, teacher, student, kinds=("hidden",)):
        """`(teacher_tap, student_tap)` names for each mapped layer and kind.

        Args:
            teacher, student: models with `num_layers` and `available_taps()`.
            kinds: tap families among `hidden`, `cls`, `attention`,
                `attention_scores`. Layer 0 pairs `embeddings` (for `hidden`
                only; attention has no layer 0).
        """
        out = []
        for t, s in self.resolve(teacher, student):
            for kind in kinds:
                if t == EMBEDDINGS or s == EMBEDDINGS:
                    if kind == "hidden" and t == s == EMBEDDINGS:
                        out.append(("embeddings", "embeddings"))
                    elif kind == "hidden":
                        raise KdplugError(
                            f"layer mapping {self.name!r} pairs layer {t} with "
                            f"{s}: embeddings can only map to embeddings"
                        )
                    continue
                out.append((f"{kind}/{t}", f"{kind}/{s}"))
        return out

    def describe(self, num_teacher_layers, num_student_layers):
        """E.g. `'uniform: T2->S1, T4->S2, T6->S3'` for docs and logs."""
        pairs = self.layer_pairs(num_teacher_layers, num_student_layers)
        text = ", ".join(f"T{t}->S{s}" for t, s in pairs)
        return f"{self.name}: {text}"


def _describe(model):
    return f"{type(model).__name__} {getattr(model, 'name', '')!r}"


def _depth(model, role):
    depth = getattr(model, "num_layers", None)
    if depth is None:
        offers = ", ".join(getattr(model, "available_taps", lambda: [])())
        raise KdplugError(
            f"the {role} ({_describe(model)}) has no transformer layers to map "
            f"(it offers taps: {offers or 'none'}); use logit-level terms "
            "without a layer mapping for it"
        )
    return int(depth)
