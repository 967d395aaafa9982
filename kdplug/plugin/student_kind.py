"""The student contract: a registered student architecture."""

from __future__ import annotations

from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar
from typing import Optional

from kdplug.plugin.configurable import Configurable

if TYPE_CHECKING:
    import keras
    import numpy as np


class PretrainedWeights:
    """A copy of a model's weight values at one moment: the teacher as loaded
    from `teacher.source`, before `teacher.finetune` changed it in place.

    The runner takes it for a `StudentKind` whose `needs_pretrained_weights`
    is true (e.g. `truncated` with `init: pretrained`, as PKD and DistilBERT
    initialise their students from the *pre-trained* model, not the
    fine-tuned one). Values are host (numpy) copies, keyed by the variable
    objects of `model`, so they are read through the teacher's own layers.

    Args:
        model: the model (a loaded, not yet fine-tuned teacher).

    Examples:

    ```python
    pretrained = PretrainedWeights(teacher)   # before fine-tuning
    ...                                       # teacher fine-tuned in place
    pretrained.get_weights(teacher.backbone.transformer_layers[0])
    ```
    """

    def __init__(self, model: keras.Model) -> None:
        import numpy as np

        self._values = {id(v): np.array(v.numpy(), copy=True) for v in model.weights}

    def get_weights(self, layer: keras.layers.Layer) -> list[np.ndarray]:
        """`layer.get_weights()` as they were at the snapshot (`layer` is one
        of the snapshotted model's layers)."""
        try:
            return [self._values[id(v)] for v in layer.weights]
        except KeyError:
            raise ValueError(
                f"layer {layer.name!r} is not part of the model these "
                "pre-trained weights were taken from") from None

    @property
    def num_bytes(self) -> int:
        return sum(v.nbytes for v in self._values.values())


class StudentKind(Configurable):
    """A student architecture that plugins register (`student.kind`).

    `build(teacher, num_classes)` receives the teacher as the runner holds
    it: fine-tuned (`teacher.finetune`) and frozen. A kind that starts from
    the teacher's *pre-trained* weights instead returns True from
    `needs_pretrained_weights`; the runner then snapshots the teacher right
    after loading it, before fine-tuning, and sets `pretrained_weights` (a
    `PretrainedWeights`) on the kind before calling `build()`. Kinds that do
    not ask are never given it, so `build(teacher, num_classes)` stays the
    whole contract for them.

    Args:
        config: an instance of the subclass's dataclass `Config`.

    Examples:

    ```python
    class Truncated(kdplug.StudentKind):
        name = "truncated"

        @dataclasses.dataclass
        class Config:
            layers: list = dataclasses.field(default_factory=lambda: [0, 1])

        def build(self, teacher, num_classes):
            ...
    ```
    """

    # Option sets `python -m kdplug.evaluation.model_table` shows for this
    # kind in docs/models.md (each parsed like a `student:` section).
    table_variants: ClassVar[tuple[dict[str, Any], ...]] = ({},)

    # The teacher's weights before fine-tuning (`PretrainedWeights`), set by
    # the runner before `build()` when `needs_pretrained_weights`; else None.
    pretrained_weights: Optional[PretrainedWeights] = None

    @property
    def needs_pretrained_weights(self) -> bool:
        """Whether `build()` reads `pretrained_weights` (default False)."""
        return False

    def build(self, teacher: Optional[keras.Model], num_classes: int) -> keras.Model:
        raise NotImplementedError(f"{type(self).__name__}.build()")
