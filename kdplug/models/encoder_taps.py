"""The encoder loop every tapped transformer classifier runs: layers up to
the deepest requested tap, attention taps on request, and the top layer for
its [CLS] position only when nothing reads its other positions."""

from kdplug.models.attention_logits import attention_logits
from kdplug.models.cls_only_layer import cls_only_layer
from kdplug.models.tap_names import add_layer_taps


def run_encoder(layers, x, names, out, padding_mask, depth, sequence_taps,
                training=False, layer_kwargs=None, cls_only=True):
    """Runs `layers[:depth]` on `x`, adding the requested layer taps to `out`.

    Args:
        layers: the encoder layers in call order (keras-hub
            `TransformerEncoder`s, or any layer called as
            `layer(x, padding_mask=..., **layer_kwargs)`).
        x: `(batch, seq, hidden)`, the first layer's input.
        names: the requested tap names (a set).
        out: the dict the taps go into.
        padding_mask: `(batch, seq)`.
        depth: how many layers must run.
        sequence_taps: `i -> set of layer i's taps that read every position`.
        training: dropout on or off.
        layer_kwargs: extra arguments of every layer call (DeBERTaV3's
            relative embeddings).
        cls_only: whether the top layer may run for [CLS] alone
            (`TransformerEncoder`s only).

    Returns:
        The last layer's output (`(batch, 1, hidden)` when only its [CLS]
        was computed).

    Examples:

    ```python
    out = {}
    x = run_encoder(backbone.transformer_layers, x, {"hidden/1", "logits"}, out,
                    inputs["padding_mask"], depth=2, sequence_taps=sequence_taps)
    ```
    """
    layer_kwargs = layer_kwargs or {}
    for i, layer in enumerate(layers[:depth], start=1):
        if cls_only and i == depth and not names & sequence_taps(i):
            # Only the top layer's [CLS] is read (pooler, classifier,
            # `cls/<depth>`): its other positions are not computed.
            x = cls_only_layer(layer, x, padding_mask, training=training)
            add_layer_taps(out, names, i, x)
            break
        if f"attention_scores/{i}" in names:
            query = layer._self_attention_layer_norm(x) if layer.normalize_first else x
            out[f"attention_scores/{i}"] = attention_logits(
                layer._self_attention_layer, query, padding_mask=padding_mask)
        if f"attention/{i}" in names:
            x, out[f"attention/{i}"] = layer(
                x, padding_mask=padding_mask, training=training,
                return_attention_scores=True)
        else:
            x = layer(x, padding_mask=padding_mask, training=training, **layer_kwargs)
        add_layer_taps(out, names, i, x)
    return x
