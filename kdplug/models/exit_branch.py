import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kdplug")
class ExitBranch(keras.layers.Layer):
    """A FastBERT student classifier: a small head on one layer's [CLS] state.

    `Dense(hidden_dim) -> tanh -> Dropout -> Dense(num_classes)` applied to the
    [CLS] vector `(batch, input_dim)`; returns logits `(batch, num_classes)`.
    Liu et al. (2020) add one such branch after every transformer layer but
    the last and train them by self-distillation (their branch also has a
    one-layer self-attention; a pooler-like MLP on [CLS] is kept here, which
    is what the final BERT classifier uses too).

    Args:
        input_dim: int. Width of the [CLS] vector (the backbone's hidden size).
        hidden_dim: int. Width of the tanh layer.
        num_classes: int.
        dropout: float. Dropout before the output layer.

    Examples:

    ```python
    branch = ExitBranch(input_dim=16, hidden_dim=16, num_classes=2)
    logits = branch(cls_vectors)  # (batch, 2)
    ```
    """

    def __init__(self, input_dim, hidden_dim, num_classes, dropout=0.0,
                 **kwargs):
        super().__init__(**kwargs)
        self.input_dim = int(input_dim)
        self.hidden_dim = int(hidden_dim)
        self.num_classes = int(num_classes)
        self.dropout = float(dropout)
        init = keras.initializers.TruncatedNormal(stddev=0.02)
        self.dense = keras.layers.Dense(
            self.hidden_dim, kernel_initializer=init, dtype=self.dtype_policy,
            name="dense",
        )
        self.drop = keras.layers.Dropout(self.dropout, name="dropout")
        self.out = keras.layers.Dense(
            self.num_classes, kernel_initializer=init, dtype=self.dtype_policy,
            name="out",
        )
        self.dense.build((None, self.input_dim))
        self.out.build((None, self.hidden_dim))
        self.built = True

    def build(self, input_shape=None):
        self.built = True

    def call(self, cls, training=False):
        h = ops.tanh(self.dense(cls))
        return self.out(self.drop(h, training=training))

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
            }
        )
        return config
