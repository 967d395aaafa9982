"""Analytic FLOP counts of the matrix multiplications in kdplug's models.

Convention (used by every `flops_per_example()`): one multiply-add is 2 FLOPs,
so a `(m, k) x (k, n)` matmul costs `2 m k n`. Only matmuls are counted:
embedding lookups, biases, layer norms, activations, softmax and the
element-wise parts of LSTM cells are left out (they are a few percent of the
total at the sizes kdplug uses). Counts are per example, forward pass only;
training costs about three times as much.

Examples:

>>> dense_flops(64, 384, 384)
18874368
"""


def dense_flops(rows, fan_in, fan_out):
    """`2 * rows * fan_in * fan_out`: a dense layer applied to `rows` vectors."""
    return 2 * int(rows) * int(fan_in) * int(fan_out)


def self_attention_flops(seq, query_dim, value_dim, inner_dim, output_dim):
    """Projections plus the two attention matmuls of one multi-head attention.

    `Q, K` from `query_dim`, `V` from `value_dim`, all to `inner_dim` (heads x
    head size), output projection to `output_dim`:
    `2S(2 q i + v i + i o) + 2 * 2 S^2 i` (scores `QK^T` and context `PV`).
    """
    projections = (
        2 * dense_flops(seq, query_dim, inner_dim)
        + dense_flops(seq, value_dim, inner_dim)
        + dense_flops(seq, inner_dim, output_dim)
    )
    return projections + 2 * 2 * int(seq) * int(seq) * int(inner_dim)


def transformer_layer_flops(seq, hidden_dim, intermediate_dim):
    """One BERT encoder layer: `8 S H^2 + 4 S^2 H + 4 S H I`."""
    return self_attention_flops(
        seq, hidden_dim, hidden_dim, hidden_dim, hidden_dim
    ) + 2 * dense_flops(seq, hidden_dim, intermediate_dim)


def cls_only_layer_flops(seq, hidden_dim, intermediate_dim):
    """A BERT encoder layer run for its [CLS] position only (`cls_only_layer`):
    keys and values of every position, the rest for one query:
    `4 S H^2 + 4 H^2 + 4 S H + 4 H I`."""
    return (
        2 * dense_flops(seq, hidden_dim, hidden_dim)
        + 2 * dense_flops(1, hidden_dim, hidden_dim)
        + 2 * 2 * int(seq) * int(hidden_dim)
        + 2 * dense_flops(1, hidden_dim, intermediate_dim)
    )


def attention_score_flops(seq, hidden_dim):
    """Extra cost of an `attention_scores/<i>` tap: `4 S H^2 + 2 S^2 H`."""
    return 2 * dense_flops(seq, hidden_dim, hidden_dim) + 2 * int(seq) ** 2 * int(
        hidden_dim
    )


def lstm_flops(seq, input_dim, units):
    """One LSTM direction over `seq` steps: `2 S * 4u(input + u)`."""
    return dense_flops(seq, input_dim + units, 4 * units)
