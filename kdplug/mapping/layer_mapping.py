from collections.abc import Sequence
from typing import Any
from typing import Optional

from kdplug.errors import ConfigError
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
    mapping fails before training with a `ConfigError` naming the layers
    of both models and the field that configured the mapping
    (`config_field`, set by its `MappingRef`: `method.mapping`; the runner
    adds the config file).

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

    # The config field this mapping was configured at (`method.mapping`),
    # set by `PluginRef.build`; None for a mapping built in Python.
    config_field: Optional[str] = None

    def layer_pairs(self, num_teacher_layers: int,
                    num_student_layers: int) -> list[tuple[int, int]]:
        raise NotImplementedError(f"{type(self).__name__}.layer_pairs()")

    def resolve(self, teacher: Any, student: Any) -> list[tuple[int, int]]:
        """Checked `(teacher_layer, student_layer)` pairs for two models."""
        n = _depth(teacher, "teacher")
        m = _depth(student, "student")
        pairs = [(int(t), int(s)) for t, s in self.layer_pairs(n, m)]
        for t, s in pairs:
            if not 0 <= s <= m:
                raise self.error(
                    f"layer mapping {self.name!r} pairs teacher layer {t} with "
                    f"student layer {s}, which does not exist: the student has "
                    f"{_layers(m)} (1..{m}; 0 is the embeddings)")
            if not 0 <= t <= n:
                raise self.error(
                    f"layer mapping {self.name!r} pairs student layer {s} with "
                    f"teacher layer {t}, which does not exist: the teacher has "
                    f"{_layers(n)} (1..{n}; 0 is the embeddings)")
        return pairs

    def error(self, message: str) -> ConfigError:
        """A `ConfigError` naming this mapping's `config_field` (the file
        is the runner's to add, `kdplug.errors.config_error`)."""
        return ConfigError(message, None, self.config_field)

    def tap_pairs(self, teacher: Any, student: Any,
                  kinds: Sequence[str] = ("hidden",)) -> list[tuple[str, str]]:
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
                        raise self.error(
                            f"layer mapping {self.name!r} pairs layer {t} with "
                            f"{s}: embeddings can only map to embeddings"
                        )
                    continue
                out.append((f"{kind}/{t}", f"{kind}/{s}"))
        return out

    def describe(self, num_teacher_layers: int, num_student_layers: int) -> str:
        """E.g. `'uniform: T2->S1, T4->S2, T6->S3'` for docs and logs."""
        pairs = self.layer_pairs(num_teacher_layers, num_student_layers)
        text = ", ".join(f"T{t}->S{s}" for t, s in pairs)
        return f"{self.name}: {text}"


def _layers(count: int) -> str:
    return f"{count} layer{'' if count == 1 else 's'}"


def _depth(model: Any, role: str) -> int:
    depth = getattr(model, "num_layers", None)
    if depth is None:
        offers = ", ".join(getattr(model, "available_taps", lambda: [])())
        raise ConfigError(
            f"the {role} ({type(model).__name__}) has no transformer layers to map "
            f"(it offers taps: {offers or 'none'}); use logit-level terms "
            "without a layer mapping for it", None,
            "student.kind" if role == "student" else "teacher.source"
        )
    return int(depth)
