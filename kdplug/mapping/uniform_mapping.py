import dataclasses

from kdplug.mapping.layer_mapping import LayerMapping


class UniformMapping(LayerMapping):
    """TinyBERT's uniform strategy: student layer `m` learns teacher layer
    `g(m) = m * N / M` (rounded down when `M` does not divide `N`), so the
    last layers always meet.

    Config:
        include_embeddings: also pair the embeddings (`g(0) = 0`), as
            TinyBERT does.

    Examples:

    >>> UniformMapping().layer_pairs(6, 3)
    [(2, 1), (4, 2), (6, 3)]
    """

    name = "uniform"
    description = "TinyBERT: student layer m <- teacher layer m*N/M"

    @dataclasses.dataclass
    class Config:
        include_embeddings: bool = False

    def layer_pairs(self, num_teacher_layers, num_student_layers):
        n, m = num_teacher_layers, num_student_layers
        start = 0 if self.config.include_embeddings else 1
        return [(j * n // m, j) for j in range(start, m + 1)]
