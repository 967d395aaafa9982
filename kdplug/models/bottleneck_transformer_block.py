import keras
from keras import ops

from kdplug.models import flops
from kdplug.models.attention_logits import attention_logits


def _dense(units, name, activation=None, dtype=None):
    return keras.layers.Dense(
        units,
        activation=activation,
        kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
        name=name,
        dtype=dtype,
    )


@keras.saving.register_keras_serializable(package="kdplug")
class BottleneckTransformerBlock(keras.layers.Layer):
    """A MobileBERT-style block: wide in and out, narrow inside.

    ```
    x (hidden_dim) --Dense+LN--> b (intra_dim)        linear bottleneck in
    a = LN(b + MHA(query=b, key=b, value=x))           heads attend in intra_dim
    a = LN(a + FFN_k(a))   for k = 1..num_feedforward  stacked FFNs in intra_dim
    y = LN(x + Dense(a))   (hidden_dim)                linear bottleneck out
    ```

    The input and output keep `hidden_dim` (MobileBERT's inter-block width,
    set to the teacher's hidden size so feature maps can be compared without a
    projection); attention and the stacked feed-forward networks run at the
    narrow `intra_dim`. As in MobileBERT, queries and keys come from the shared
    bottleneck and values from the wide input. Layer norms are standard
    `LayerNormalization` (MobileBERT's NoNorm is a speed trick left out).

    Args:
        hidden_dim: int. Inter-block (input/output) width.
        intra_dim: int. Intra-block width; divisible by `num_heads`.
        num_heads: int. Attention heads.
        intermediate_dim: int. Inner width of each feed-forward network.
        num_feedforward: int. Stacked feed-forward networks per block.
        activation: feed-forward activation (MobileBERT uses relu).
        dropout: float. Dropout on attention probabilities and block outputs.
        layer_norm_epsilon: float.

    Examples:

    ```python
    block = BottleneckTransformerBlock(hidden_dim=384, intra_dim=128,
                                       num_heads=4, intermediate_dim=512)
    y, attention = block(x, padding_mask=mask, return_attention=True)
    ```
    """

    def __init__(self, hidden_dim, intra_dim, num_heads, intermediate_dim,
                 num_feedforward=4, activation="relu", dropout=0.1,
                 layer_norm_epsilon=1e-12, **kwargs):
        super().__init__(**kwargs)
        if intra_dim % num_heads:
            raise ValueError(
                f"intra_dim {intra_dim} must be divisible by num_heads {num_heads}"
            )
        self.hidden_dim = int(hidden_dim)
        self.intra_dim = int(intra_dim)
        self.num_heads = int(num_heads)
        self.intermediate_dim = int(intermediate_dim)
        self.num_feedforward = int(num_feedforward)
        self.activation = activation
        self.dropout = float(dropout)
        self.layer_norm_epsilon = float(layer_norm_epsilon)
        dt = self.dtype_policy
        eps = self.layer_norm_epsilon

        self.bottleneck_in = _dense(intra_dim, "bottleneck_in", dtype=dt)
        self.bottleneck_in_norm = keras.layers.LayerNormalization(
            epsilon=eps, name="bottleneck_in_norm", dtype=dt)
        self.attention = keras.layers.MultiHeadAttention(
            num_heads=num_heads,
            key_dim=intra_dim // num_heads,
            output_shape=intra_dim,
            dropout=dropout,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            name="attention",
            dtype=dt,
        )
        self.attention_norm = keras.layers.LayerNormalization(
            epsilon=eps, name="attention_norm", dtype=dt)
        self.ffn_intermediate = [
            _dense(intermediate_dim, f"ffn_{k}_intermediate", activation, dt)
            for k in range(num_feedforward)
        ]
        self.ffn_output = [
            _dense(intra_dim, f"ffn_{k}_output", dtype=dt)
            for k in range(num_feedforward)
        ]
        self.ffn_norm = [
            keras.layers.LayerNormalization(epsilon=eps, name=f"ffn_{k}_norm", dtype=dt)
            for k in range(num_feedforward)
        ]
        self.bottleneck_out = _dense(hidden_dim, "bottleneck_out", dtype=dt)
        self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        self.output_norm = keras.layers.LayerNormalization(
            epsilon=eps, name="output_norm", dtype=dt)

    def build(self, input_shape=None):
        wide = (None, None, self.hidden_dim)
        narrow = (None, None, self.intra_dim)
        self.bottleneck_in.build(wide)
        self.bottleneck_in_norm.build(narrow)
        self.attention.build(narrow, wide, narrow)
        self.attention_norm.build(narrow)
        for inner, outer, norm in zip(
            self.ffn_intermediate, self.ffn_output, self.ffn_norm
        ):
            inner.build(narrow)
            outer.build((None, None, self.intermediate_dim))
            norm.build(narrow)
        self.bottleneck_out.build(narrow)
        self.output_norm.build(wide)
        self.built = True

    def attention_scores(self, inputs, padding_mask=None):
        """Pre-softmax attention scores `(batch, heads, seq, seq)`.

        Recomputes the bottleneck and the query/key projections (an extra
        `2 S H h + 4 S h^2 + 2 S^2 h` FLOPs, `h = intra_dim`); padded keys
        hold `MASKED_SCORE`.
        """
        b = self.bottleneck_in_norm(self.bottleneck_in(inputs))
        return attention_logits(self.attention, b, b, padding_mask)

    def call(self, inputs, padding_mask=None, training=None,
             return_attention=False):
        x = inputs
        b = self.bottleneck_in_norm(self.bottleneck_in(x))
        mask = None
        if padding_mask is not None:
            mask = ops.cast(padding_mask, "bool")[:, None, :]
        a, probs = self.attention(
            query=b, value=x, key=b, attention_mask=mask,
            return_attention_scores=True, training=training,
        )
        a = self.attention_norm(b + a)
        for inner, outer, norm in zip(
            self.ffn_intermediate, self.ffn_output, self.ffn_norm
        ):
            a = norm(a + outer(inner(a)))
        y = self.output_dropout(self.bottleneck_out(a), training=training)
        y = self.output_norm(x + y)
        if return_attention:
            return y, probs
        return y

    def flops_per_example(self, sequence_length):
        """`2SHh + (4Sh^2 + 2SHh + 2Sh^2 + 4S^2h) + F * 4ShI + 2ShH`."""
        s, wide, h = int(sequence_length), self.hidden_dim, self.intra_dim
        return (
            flops.dense_flops(s, wide, h)
            + flops.self_attention_flops(s, h, wide, h, h)
            + self.num_feedforward * 2 * flops.dense_flops(s, h, self.intermediate_dim)
            + flops.dense_flops(s, h, wide)
        )

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "hidden_dim": self.hidden_dim,
                "intra_dim": self.intra_dim,
                "num_heads": self.num_heads,
                "intermediate_dim": self.intermediate_dim,
                "num_feedforward": self.num_feedforward,
                "activation": self.activation,
                "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon,
            }
        )
        return config
