"""Shared validation of tap names for kdplug's models."""

from kdplug.errors import KdplugError


def check_tap_names(model, names, offers):
    """Raises a `KdplugError` naming the model and what it offers.

    Asking a model without attention (e.g. a BiLSTM) for an attention tap
    gets its own message, since it is a design mistake, not a typo.
    """
    names = set(names)
    unknown = sorted(names - set(model.available_taps()))
    if not unknown:
        return names
    attention = [n for n in unknown if n.startswith("attention")]
    if attention and not any(
        n.startswith("attention") for n in model.available_taps()
    ):
        raise KdplugError(
            f"{type(model).__name__} {model.name!r} has no attention, so it "
            f"cannot provide {attention}; drop attention terms (or their layer "
            "mapping) for this student, or choose a transformer student "
            "(truncated, narrow, bottleneck)"
        )
    raise KdplugError(
        f"{type(model).__name__} {model.name!r} has no tap(s) {unknown}; it "
        f"offers: {offers}"
    )


def depth_needed(names, num_layers):
    """How many layers must run to produce `names` (all for pooled/logits)."""
    if set(names) & {"pooled", "logits"}:
        return num_layers
    depth = 0
    for name in names:
        if "/" in name:
            depth = max(depth, int(name.split("/")[1]))
    return depth
