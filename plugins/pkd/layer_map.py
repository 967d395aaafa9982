"""PKD's teacher-layer <-> student-layer mapping."""

from kdplug.errors import KdplugError

STRATEGIES = ("skip", "last")


def pkd_layer_map(strategy, num_teacher_layers, num_student_layers):
    """The `(teacher_layer, student_layer)` pairs PKD matches (1-based).

    The student's last layer is not patient-matched: it feeds the logits,
    which the soft loss matches against the teacher's last layer. Student
    layer `j` (`1 <= j < M`) learns from teacher layer

    - `skip`: `j * N // M` (every `k = N / M`-th layer: 12 -> 6 gives
      {2, 4, 6, 8, 10}, 6 -> 3 gives {2, 4});
    - `last`: `N - M + j` (the last `M - 1` layers below the top one:
      12 -> 6 gives {7, 8, 9, 10, 11}, 6 -> 3 gives {4, 5}).

    Args:
        strategy: `"skip"` or `"last"`.
        num_teacher_layers: int `N`.
        num_student_layers: int `M <= N`.

    Examples:

    >>> pkd_layer_map("skip", 6, 3)
    [(2, 1), (4, 2)]
    >>> pkd_layer_map("last", 6, 3)
    [(4, 1), (5, 2)]
    """
    n, m = int(num_teacher_layers), int(num_student_layers)
    if strategy not in STRATEGIES:
        raise KdplugError(f"PKD strategy must be one of {STRATEGIES}, got {strategy!r}")
    if not 1 <= m <= n:
        raise KdplugError(
            f"PKD needs a student no deeper than its teacher, got a {m}-layer "
            f"student for a {n}-layer teacher"
        )
    if strategy == "skip":
        return [(j * n // m, j) for j in range(1, m)]
    return [(n - m + j, j) for j in range(1, m)]
