import math

import keras
from keras import ops

from kdplug.models import dense_flops
from kdplug.models import mask_padded_keys
from kdplug.models import pool_sequence

POOLINGS = ("attention", "cls", "mean")
FORMS = ("paper", "residual")


@keras.saving.register_keras_serializable(package="kdplug")
class ExitBranch(keras.layers.Layer):
    """A FastBERT student classifier on one transformer layer's output.

    `pooling="attention"`, `form="paper"` (the paper's student classifier,
    Liu et al. 2020, Table 1, as its reference code's `output_layer_0`,
    `self_atten`, `output_layer_1`, `output_layer_2`):

    `h = tanh(X W_0 + b_0)` over the layer's sequence `X`,
    `a = Attention(h)[CLS]` (one self-attention layer of width `hidden_dim`,
    `num_heads` heads, output projection, no residual),
    `logits = tanh(a W_1 + b_1) W_2 + b_2` (Dropout before `W_2`).

    `form="residual"` (kdplug 0.1): no tanh after `W_0` and a residual
    around the attention, `a = h[CLS] + Attention(h)[CLS]`; the rest as
    above. Only the [CLS] row of the attention is computed: it is the only
    one the classifier reads. The attention lets the branch pool the whole
    sentence, which the [CLS] state of an early layer has barely seen yet.
    The key projection has no bias (softmax cancels it: the same function).

    `pooling="cls"`: the cheaper pooler-like head on the [CLS] vector only,
    `Dense(hidden_dim) -> tanh -> Dropout -> Dense(num_classes)`.
    `pooling="mean"`: the same head on the mean of the layer's states over
    the real (non-padding) positions (`kdplug.models.sentence_pooling`),
    the branch for a mean-pooled model.

    Args:
        input_dim: int. Width of the layer's states (the backbone's hidden size).
        hidden_dim: int. Width of the branch.
        num_classes: int.
        dropout: float. Dropout before the output layer.
        pooling: `"attention"`, `"cls"` or `"mean"`. See above.
        form: `"paper"` or `"residual"` (attention pooling only). The
            default is `"residual"` so that configs saved before the key
            existed load as they were built; `EarlyExitBertClassifier` and
            the `fastbert` method default to `"paper"`.
        num_heads: int. Attention heads (`pooling="attention"`); must divide
            `hidden_dim`.

    Call arguments:
        hidden: `(batch, seq, input_dim)` layer states (a `(batch,
            input_dim)` [CLS] vector is accepted with `pooling="cls"`).
        padding_mask: `(batch, seq)`, 1 for tokens, 0 for padding (attention
            pooling: all tokens when omitted; mean pooling needs it).

    Returns logits `(batch, num_classes)`.

    Examples:

    ```python
    branch = ExitBranch(input_dim=16, hidden_dim=8, num_classes=2, num_heads=2,
                        form="paper")
    logits = branch(layer_states, padding_mask=mask)  # (batch, 2)
    ```
    """

    def __init__(self, input_dim, hidden_dim, num_classes, dropout=0.0,
                 pooling="attention", num_heads=2, form="residual", **kwargs):
        super().__init__(**kwargs)
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        if form not in FORMS:
            raise ValueError(f"form must be one of {FORMS}, got {form!r}")
        if pooling == "attention" and hidden_dim % num_heads:
            raise ValueError(f"num_heads ({num_heads}) must divide hidden_dim "
                             f"({hidden_dim})")
        self.input_dim = int(input_dim)
        self.hidden_dim = int(hidden_dim)
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        self.pooling = pooling
        self.num_heads = int(num_heads)
        self.form = form
        init = keras.initializers.TruncatedNormal(stddev=0.02)

        def dense(units, name, fan_in, use_bias=True):
            layer = keras.layers.Dense(units, kernel_initializer=init, use_bias=use_bias,
                                       dtype=self.dtype_policy, name=name)
            layer.build((None, fan_in))
            return layer

        if pooling == "attention":
            self.project = dense(self.hidden_dim, "project", self.input_dim)
            self.query, self.value, self.attention_out = (
                dense(self.hidden_dim, name, self.hidden_dim)
                for name in ("query", "value", "attention_out"))
            # A key bias adds the same score to every position of a query:
            # softmax cancels it, so it would never train.
            self.key = dense(self.hidden_dim, "key", self.hidden_dim, use_bias=False)
        self.dense = dense(self.hidden_dim, "dense",
                           self.hidden_dim if pooling == "attention" else self.input_dim)
        self.drop = keras.layers.Dropout(self.dropout, name="dropout")
        self.out = dense(self.num_classes, "out", self.hidden_dim)
        self.built = True

    def build(self, input_shape=None):
        self.built = True

    def call(self, hidden, padding_mask=None, training=False):
        h = ops.tanh(self.dense(self.pool(hidden, padding_mask)))
        return self.out(self.drop(h, training=training))

    def pool(self, hidden, padding_mask=None):
        """What the tanh layer reads: the [CLS] vector (`"cls"`), the mean
        of the real positions (`"mean"`), or the self-attention layer's
        output at [CLS] (`"attention"`)."""
        if self.pooling == "cls":
            return hidden[:, 0, :] if len(hidden.shape) == 3 else hidden
        if self.pooling == "mean":
            return pool_sequence(hidden, padding_mask, "mean")
        h = self.project(hidden)                       # (b, s, d)
        if self.form == "paper":
            h = ops.tanh(h)
        heads, size = self.num_heads, self.hidden_dim // self.num_heads
        q = ops.reshape(self.query(h[:, 0, :]), (-1, heads, 1, size))
        k = ops.transpose(ops.reshape(self.key(h), (-1, ops.shape(h)[1], heads, size)),
                          (0, 2, 3, 1))               # (b, heads, size, s)
        v = ops.transpose(ops.reshape(self.value(h), (-1, ops.shape(h)[1], heads, size)),
                          (0, 2, 1, 3))               # (b, heads, s, size)
        scores = mask_padded_keys(ops.matmul(q, k) / math.sqrt(size),  # (b, heads, 1, s)
                                  padding_mask)
        weights = ops.softmax(ops.cast(scores, "float32"), axis=-1)
        context = ops.matmul(ops.cast(weights, v.dtype), v)  # (b, heads, 1, size)
        context = ops.reshape(context, (-1, self.hidden_dim))
        if self.form == "paper":
            return self.attention_out(context)
        return h[:, 0, :] + self.attention_out(context)

    def flops_per_example(self, sequence_length):
        """FLOPs (2 x multiply-adds) of one example at `sequence_length` tokens."""
        d, s = self.hidden_dim, int(sequence_length)
        head = dense_flops(1, d, self.num_classes)
        if self.pooling != "attention":  # the mean itself is no matmul
            return dense_flops(1, self.input_dim, d) + head
        return (dense_flops(s, self.input_dim, d)     # project every position
                + 2 * dense_flops(s, d, d)            # keys, values
                + 3 * dense_flops(1, d, d)            # query, attention output, tanh layer
                + 2 * 2 * s * d                       # [CLS] scores, weighted sum
                + head)

    def compute_output_shape(self, input_shape):
        return (input_shape[0], self.num_classes)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "input_dim": self.input_dim,
                "hidden_dim": self.hidden_dim,
                "num_classes": self.num_classes,
                "dropout": self.dropout,
                "pooling": self.pooling,
                "num_heads": self.num_heads,
                "form": self.form,
            }
        )
        return config
