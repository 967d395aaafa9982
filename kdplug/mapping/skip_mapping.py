import dataclasses
from typing import Optional

from kdplug.config import PositiveInt
from kdplug.mapping.layer_mapping import LayerMapping


class SkipMapping(LayerMapping):
    """Patient KD's PKD-Skip: student layer `j` learns every k-th teacher layer.

    By default student layer `j` learns teacher layer `j * N // M` (12 -> 6:
    teacher layers 2, 4, 6, 8, 10; the same pairs as the `pkd` method), or
    `j * every` with an explicit stride. As in the paper, the student's last
    layer is left to the prediction loss unless `include_last` is set.

    Config:
        every: an explicit stride `k`; None means `j * N // M`.
        include_last: also pair student layer `M` (with teacher layer `N`, or
            `M * every`).

    Examples:

    >>> SkipMapping().layer_pairs(12, 6)
    [(2, 1), (4, 2), (6, 3), (8, 4), (10, 5)]
    """

    name = "skip"
    description = "PKD-Skip: student layer j <- teacher layer j*N/M (or j*k)"

    @dataclasses.dataclass
    class Config:
        every: Optional[PositiveInt] = None
        include_last: bool = False

    def layer_pairs(self, num_teacher_layers, num_student_layers):
        n, m = num_teacher_layers, num_student_layers
        if m > n and not self.config.every:
            raise self.error(
                f"layer mapping 'skip' needs a student no deeper than the "
                f"teacher; got {m} student and {n} teacher layers"
            )
        k = self.config.every
        last = m if self.config.include_last else m - 1
        pairs = [(j * k if k else j * n // m, j) for j in range(1, last + 1)]
        too_deep = [t for t, _ in pairs if t > n]
        if too_deep:
            raise self.error(
                f"layer mapping 'skip' with every={k} needs teacher layers "
                f"{too_deep}, but the teacher has {n} layers"
            )
        return pairs
