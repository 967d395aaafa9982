"""Shared validation of tap names for kdplug's models."""

from kdplug.errors import KdplugError
from kdplug.models.sentence_pooling import pool_sequence


def check_tap_names(model, names, offers):
    """Raises a `KdplugError` naming the model and what it offers.

    Asking a model without attention (e.g. a BiLSTM) for an attention tap
    gets its own message, since it is a design mistake, not a typo.
    """
    names = set(names)
    unknown = sorted(names - set(model.available_taps()))
    if not unknown:
        return names
    what = f"{type(model).__name__} {model.name!r}"
    family = getattr(getattr(model, "family", None), "name", None)
    if family:  # a keras-hub family (kdplug.models.HubTextClassifier)
        what += f" (keras-hub family {family})"
    attention = [n for n in unknown if n.startswith("attention")]
    if attention and not any(
        n.startswith("attention") for n in model.available_taps()
    ):
        raise KdplugError(
            f"{what} has no attention, so it cannot provide {attention}; drop "
            "attention terms (or their layer mapping) for this model, or choose "
            "one with attention: a transformer student (truncated, narrow, "
            "bottleneck), a teacher family whose layers are TransformerEncoders "
            "(docs/models.md, \"Families\")"
        )
    raise KdplugError(f"{what} has no tap(s) {unknown}; it offers: {offers}")


def depth_needed(names, num_layers):
    """How many layers must run to produce `names` (all for pooled/logits)."""
    if set(names) & {"pooled", "logits"}:
        return num_layers
    depth = 0
    for name in names:
        if "/" in name:
            depth = max(depth, int(name.split("/")[1]))
    return depth


def sequence_taps(i):
    """Layer `i`'s taps that read every position (not only its [CLS])."""
    return {f"hidden/{i}", f"attention/{i}", f"attention_scores/{i}"}


def add_layer_taps(out, names, i, x):
    """Adds layer `i`'s `hidden/<i>` and `cls/<i>` taps of `x` when asked."""
    if f"hidden/{i}" in names:
        out[f"hidden/{i}"] = x
    if f"cls/{i}" in names:
        out[f"cls/{i}"] = x[:, 0, :]


def top_sequence_taps(num_layers, head_taps):
    """`i -> layer i's taps that read every position`: `sequence_taps(i)`,
    and at the top layer (`num_layers`) `head_taps` too, the head's taps
    that read all of it (`kdplug.models.sentence_pooling.reads_every_position`:
    mean pooling, a per-token classifier). What `run_encoder` takes as
    `sequence_taps`."""
    head_taps = frozenset(head_taps)

    def taps(i):
        return sequence_taps(i) | head_taps if i == num_layers else sequence_taps(i)

    return taps


def add_head_taps(out, names, x, pooled_dense, classifier, output_dropout,
                  training=False, padding_mask=None, pooling="cls"):
    """Adds the `pooled` (the sentence vector through `pooled_dense`: [CLS],
    or with `pooling="mean"` the mean of the positions `padding_mask`
    keeps, `pool_sequence`) and `logits` taps."""
    if names & {"pooled", "logits"}:
        pooled = pooled_dense(pool_sequence(x, padding_mask, pooling))
        if "pooled" in names:
            out["pooled"] = pooled
        if "logits" in names:
            out["logits"] = classifier(output_dropout(pooled, training=training))


def transformer_taps(num_layers):
    """The taps of a transformer classifier with `num_layers` layers."""
    names = ["embeddings", "pooled", "logits"]
    for i in range(1, num_layers + 1):
        names += [f"hidden/{i}", f"cls/{i}", f"attention/{i}",
                  f"attention_scores/{i}"]
    return names


def transformer_tap_width(name, hidden_dim, num_classes):
    """A transformer classifier's tap width: `num_classes` for logits, None
    for attention maps, else `hidden_dim`."""
    if name == "logits":
        return num_classes
    if name.startswith("attention"):
        return None
    return hidden_dim
