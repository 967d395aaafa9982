import dataclasses

from kdplug.mapping.layer_mapping import LayerMapping


class LastMapping(LayerMapping):
    """Patient KD's PKD-Last: the student learns the teacher's last layers.

    Student layer `j` learns teacher layer `N - M + j` (12 -> 6: teacher
    layers 7..11). As in the paper the last pair is left to the prediction
    loss unless `include_last` is set.

    Config:
        include_last: also pair student layer `M` with teacher layer `N`.

    Examples:

    >>> LastMapping().layer_pairs(12, 6)
    [(7, 1), (8, 2), (9, 3), (10, 4), (11, 5)]
    """

    name = "last"
    description = "PKD-Last: student layer j <- teacher layer N-M+j"

    @dataclasses.dataclass
    class Config:
        include_last: bool = False

    def layer_pairs(self, num_teacher_layers, num_student_layers):
        n, m = num_teacher_layers, num_student_layers
        if m > n:
            raise self.error(
                f"layer mapping 'last' needs a student no deeper than the "
                f"teacher; got {m} student and {n} teacher layers"
            )
        last = m if self.config.include_last else m - 1
        return [(n - m + j, j) for j in range(1, last + 1)]
