"""Declared value ranges for config fields.

A field's range is part of its type: `Annotated[int, Range(1, 10_000)]`.
`kdplug.config.schema.coerce` checks it after the type, so every section
and every plugin `Config` gets the same error (file, dotted field, value,
the allowed range) without a hand-written `__post_init__` check per field.

Examples:

```python
@dataclasses.dataclass
class Config:
    epochs: Annotated[int, Range(1, 10_000)] = 3
    learning_rate: Annotated[float, Range(0, 10, low_open=True)] = 1e-4
    warmup_ratio: Annotated[float, Range(0, 1, high_open=True)] = 0.1
    max_rows: Optional[Annotated[int, Range(1)]] = None
```

`parse(Config, {"epochs": 0}, "training", "x.yaml")` raises
`x.yaml: training.epochs: must be in [1, 10000] (got 0)`.
"""

import dataclasses
from typing import Annotated
from typing import Optional


@dataclasses.dataclass(frozen=True)
class Range:
    """The closed (or half-open) interval a number must lie in.

    Args:
        low: the smallest allowed value (None: no lower bound).
        high: the largest allowed value (None: no upper bound).
        low_open: exclude `low` itself (`> low` instead of `>= low`).
        high_open: exclude `high` itself.
    """

    low: Optional[float] = None
    high: Optional[float] = None
    low_open: bool = False
    high_open: bool = False

    def contains(self, value):
        if self.low is not None and (
                value < self.low or (self.low_open and value == self.low)):
            return False
        if self.high is not None and (
                value > self.high or (self.high_open and value == self.high)):
            return False
        return True

    def problem(self, value):
        """`describe()` when `value` lies outside the range, else None."""
        return None if self.contains(value) else self.describe()

    def describe(self):
        """`must be in [1, 10000]`, `must be > 0`, `must be in [0, 1)`."""
        if self.high is None:
            return f"must be {'>' if self.low_open else '>='} {_num(self.low)}"
        if self.low is None:
            return f"must be {'<' if self.high_open else '<='} {_num(self.high)}"
        return (f"must be in {'(' if self.low_open else '['}{_num(self.low)}, "
                f"{_num(self.high)}{')' if self.high_open else ']'}")


@dataclasses.dataclass(frozen=True)
class Items:
    """What a list field must hold: at least `min` items, none repeated
    (with `distinct`; compared by the items' `key` attribute when given).

    Args:
        min: the fewest items allowed.
        distinct: refuse a list that repeats an item.
        key: compare items by this attribute (e.g. a task's `name`).
        noun: what one item is, for the message ("task", "threshold").

    Examples:

    ```python
    tasks: Annotated[List[TaskConfig], Items(min=1, distinct=True, key="name",
                                             noun="task")]
    # x.yaml: method.tasks: must list at least one task (got [])
    ```
    """

    min: int = 0
    distinct: bool = False
    key: Optional[str] = None
    noun: str = "item"

    def problem(self, value):
        """What is wrong with the list `value`, or None."""
        if len(value) < self.min:
            least = "one" if self.min == 1 else str(self.min)
            return f"must list at least {least} {self.noun}{'' if self.min == 1 else 's'}"
        if self.distinct:
            seen = [getattr(v, self.key) if self.key else v for v in value]
            repeated = sorted({str(v) for v in seen if seen.count(v) > 1})
            if repeated:
                return (f"must not list a{'n' if self.noun[0] in 'aeiou' else ''} "
                        f"{self.noun} twice ({', '.join(repeated)})")
        return None

    def shown(self, value):
        """The list as an error message echoes it: the items' `key`s when
        they are compared by it (a task's name, not the whole task)."""
        return [getattr(v, self.key) for v in value] if self.key else value


def _num(value):
    return f"{value:g}" if isinstance(value, float) else str(value)


# Ranges most configs need (`Optional[PositiveInt]` for "null or >= 1").
PositiveInt = Annotated[int, Range(1)]
NonNegativeInt = Annotated[int, Range(0)]
NonNegativeFloat = Annotated[float, Range(0)]  # a loss weight
PositiveFloat = Annotated[float, Range(0, low_open=True)]
Probability = Annotated[float, Range(0, 1)]
Fraction = Annotated[float, Range(0, 1, high_open=True)]  # dropout, warmup
# The training recipe's ranges (`training:`, `teacher.finetune:`, `distill()`).
Epochs = Annotated[int, Range(1, 10_000)]
BatchSize = Annotated[int, Range(1, 65_536)]
LearningRate = Annotated[float, Range(0, 10, low_open=True)]
WeightDecay = Annotated[float, Range(0, 1)]
