import keras


@keras.saving.register_keras_serializable(package="kdplug")
class Projection(keras.layers.Layer):
    """A learned linear map `W_h` from a student feature to the teacher's width.

    TinyBERT's `H_S W_h`: applied to the student's hidden states (or
    embeddings, [CLS] vectors) before comparing them with the teacher's.
    It is built at construction, so a `Term` holding it can be saved before
    its first call. Keep projections inside the `Term` layers that use them:
    they then train with the student (the Distiller's trainable variables
    include its terms'), are saved with the Distiller, and are never part of
    the exported student.

    Args:
        output_dim: int. The teacher's width.
        input_dim: int. The student's width.
        use_bias: bool.

    Examples:

    ```python
    project = Projection(output_dim=384, input_dim=312)
    loss = ops.mean(ops.square(project(student["hidden/2"]) - teacher["hidden/4"]))
    ```
    """

    def __init__(self, output_dim, input_dim, use_bias=True, **kwargs):
        super().__init__(**kwargs)
        self.output_dim = int(output_dim)
        self.input_dim = int(input_dim)
        self.use_bias = bool(use_bias)
        self.dense = keras.layers.Dense(
            self.output_dim,
            use_bias=self.use_bias,
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            name="w_h",
            dtype=self.dtype_policy,
        )
        self.build((None, self.input_dim))

    def build(self, input_shape=None):
        self.dense.build((None, self.input_dim))
        self.built = True

    def call(self, inputs):
        return self.dense(inputs)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape[:-1]) + (self.output_dim,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "output_dim": self.output_dim,
                "input_dim": self.input_dim,
                "use_bias": self.use_bias,
            }
        )
        return config
