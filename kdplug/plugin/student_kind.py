"""The student contract: a registered student architecture."""

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

        def build(self, teacher, num_classes):
            ...
    ```
    """

    def build(self, teacher, num_classes):
        raise NotImplementedError(f"{type(self).__name__}.build()")
