"""The student contract: a registered student architecture."""

from typing import ClassVar

from kdplug.plugin.configurable import Configurable


class StudentKind(Configurable):
    """A student architecture that plugins register (`student.kind`).

    Args:
        config: an instance of the subclass's dataclass `Config`.

    Examples:

    ```python
    class Truncated(kdplug.StudentKind):
        name = "truncated"

        @dataclasses.dataclass
        class Config:
            layers: list = dataclasses.field(default_factory=lambda: [0, 1])

        # Option sets `python -m kdplug.evaluation.model_table` shows for this
    # kind in docs/models.md (each parsed like a `student:` section).
    table_variants: ClassVar[tuple] = ({},)

    def build(self, teacher, num_classes):
            ...
    ```
    """

    # Option sets `python -m kdplug.evaluation.model_table` shows for this
    # kind in docs/models.md (each parsed like a `student:` section).
    table_variants: ClassVar[tuple] = ({},)

    def build(self, teacher, num_classes):
        raise NotImplementedError(f"{type(self).__name__}.build()")
