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

    def describe(self):
        """`must be in [1, 10000]`, `must be > 0`, `must be in [0, 1)`."""
        if self.high is None:
            return f"must be {'>' if self.low_open else '>='} {_num(self.low)}"
        if self.low is None:
            return f"must be {'<' if self.high_open else '<='} {_num(self.high)}"
        return (f"must be in {'(' if self.low_open else '['}{_num(self.low)}, "
                f"{_num(self.high)}{')' if self.high_open else ']'}")


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
