"""Checking teacher/student tap pairs and creating projections where needed."""

from kdplug.errors import KdplugError
from kdplug.mapping.head_reduction import HEAD_REDUCTIONS
from kdplug.mapping.projection import Projection
from kdplug.models.keyed_inputs import KeyedInputs
from kdplug.models.tap_names import check_tap_names


def _is_attention(tap):
    return tap.startswith("attention")


def check_tap_pair(teacher, student, teacher_tap, student_tap,
                   head_reduction=None):
    """Raises a `KdplugError` when a pair cannot be compared; returns
    False for a pair it leaves to the runner (below), else True.

    Checks that both taps exist (a BiLSTM asked for attention gets its own
    message), that attention is paired with attention of the same kind
    (probabilities vs. pre-softmax scores) and that head counts match or a
    `head_reduction` (`"mean"` or `"group"`) is declared.

    A pair over token positions of a student with its own tokenizer
    (`KeyedInputs`, `student.kind: hub`) is not checked further: no head
    reduction or projection makes it comparable, and the runner refuses it
    with the stage and term that read it before anything trains
    (`check_own_tokenizer_terms`), which is what the user has to change;
    a method's own checks of the pair (widths) should skip it too.
    """
    if any(isinstance(model, KeyedInputs) and not model.compares(tap)
           for model, tap in ((teacher, teacher_tap), (student, student_tap))):
        return False
    for model, tap, role in ((teacher, teacher_tap, "teacher"),
                             (student, student_tap, "student")):
        try:
            check_tap_names(model, [tap], ", ".join(model.available_taps()))
        except KdplugError as e:
            raise KdplugError(f"{role} tap {tap!r}: {e}") from None
    if _is_attention(teacher_tap) != _is_attention(student_tap) or (
        teacher_tap.split("/")[0] != student_tap.split("/")[0]
        and _is_attention(teacher_tap)
    ):
        raise KdplugError(
            f"cannot compare teacher tap {teacher_tap!r} with student tap "
            f"{student_tap!r}: attention maps pair with attention maps of the "
            "same kind (attention/ or attention_scores/), features with features"
        )
    if not _is_attention(teacher_tap):
        return True
    t_heads = getattr(teacher, "num_heads", None)
    s_heads = getattr(student, "num_heads", None)
    if t_heads == s_heads:
        return True
    if head_reduction is None:
        hint = "'mean' (average each model's heads to one map)"
        if t_heads and s_heads and max(t_heads, s_heads) % min(t_heads, s_heads) == 0:
            hint += (
                f" or 'group' (average groups of "
                f"{max(t_heads, s_heads) // min(t_heads, s_heads)} heads)"
            )
        raise KdplugError(
            f"attention mapping {teacher_tap!r} -> {student_tap!r} pairs a "
            f"teacher with {t_heads} heads and a student with {s_heads} heads; "
            f"declare a head reduction: {hint}"
        )
    if head_reduction not in HEAD_REDUCTIONS:
        raise KdplugError(
            f"unknown head_reduction {head_reduction!r}; known: "
            f"{', '.join(HEAD_REDUCTIONS)}"
        )
    if head_reduction == "group" and max(t_heads, s_heads) % min(t_heads, s_heads):
        raise KdplugError(
            f"head_reduction 'group' needs one head count to divide the other; "
            f"got teacher {t_heads} and student {s_heads} heads (use 'mean')"
        )
    return True


def build_projections(teacher, student, tap_pairs, head_reduction=None,
                      use_bias=True, name_prefix="projection"):
    """One `Projection` per pair whose widths differ, `None` elsewhere.

    Widths come from `model.tap_width(name)`. A projection maps the
    student's width to the teacher's (TinyBERT's `W_h`). Attention pairs
    never get one; they are checked for matching head counts instead (see
    `check_tap_pair`). Store the returned layers in the `Term` that uses
    them, so they train with the student and stay out of the exported model.

    Args:
        teacher, student: models with `available_taps()` and `tap_width()`.
        tap_pairs: list of `(teacher_tap, student_tap)`.
        head_reduction: None, `"mean"` or `"group"`, for attention pairs
            whose head counts differ.
        use_bias: bool.
        name_prefix: str. Layers are named `<prefix>_<student_tap>`.

    Returns:
        A list aligned with `tap_pairs`.

    Examples:

    ```python
    pairs = UniformMapping().tap_pairs(teacher, student)
    projections = build_projections(teacher, student, pairs)
    # [Projection(312 -> 384), ...] for a narrow student, [None, ...] for a
    # bottleneck student whose inter-block width is the teacher's
    ```
    """
    out = []
    for teacher_tap, student_tap in tap_pairs:
        check_tap_pair(teacher, student, teacher_tap, student_tap, head_reduction)
        if _is_attention(teacher_tap):
            out.append(None)
            continue
        t_width = teacher.tap_width(teacher_tap)
        s_width = student.tap_width(student_tap)
        if t_width == s_width:
            out.append(None)
            continue
        safe = student_tap.replace("/", "_")
        out.append(
            Projection(t_width, s_width, use_bias=use_bias,
                       name=f"{name_prefix}_{safe}")
        )
    return out
