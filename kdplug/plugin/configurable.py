import dataclasses
from typing import Any
from typing import ClassVar
from typing import Optional


class Configurable:
    """Base of every class a plugin registers (methods, students, mappings,
    augmenters): the `name` configs use and a dataclass `Config` of typed
    options, validated from the YAML section that names the class.

    Args:
        config: an instance of the subclass's `Config` (defaults if None).

    Examples:

    ```python
    class Shout(Augmenter):  # an Augmenter is a Configurable
        name = "shout"

        @dataclasses.dataclass
        class Config:
            p: float = 0.5
    ```
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    @dataclasses.dataclass
    class Config:
        pass

    def __init__(self, config: Optional[Any] = None) -> None:
        self.config: Any = config if config is not None else self.Config()
