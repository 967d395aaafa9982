"""AdamW whose per-variable update is TensorFlow's fused Adam kernel."""

import keras
import tensorflow as tf

# The dtypes TensorFlow's fused Adam kernel is used for; others (a float16
# or bfloat16 variable) take Keras' update.
FUSED_DTYPES = ("float32", "float64")


@keras.saving.register_keras_serializable(package="kdplug")
class FusedAdamW(keras.optimizers.AdamW):
    """`keras.optimizers.AdamW`, each variable updated by one fused kernel.

    The same algorithm as Keras' AdamW (Loshchilov & Hutter 2019: decoupled
    weight decay, then Adam with bias correction, epsilon outside the square
    root):

        var -= lr * weight_decay * var        (variables not excluded)
        m += (1 - beta_1) * (g - m)
        v += (1 - beta_2) * (g^2 - v)
        var -= lr * sqrt(1 - beta_2^t) / (1 - beta_1^t) * m / (sqrt(v) + eps)

    Keras writes each variable's update as about fifty small graph ops and
    recomputes the learning-rate schedule, the bias corrections and their
    casts for every variable; traced into a train step that is most of
    the step's graph (the 2-layer toy BERT's 41 variables: 2,286 optimizer
    ops; MiniLM-L6's 105: 5,726). Here the step's scalars are
    computed once per update and each variable takes TensorFlow's
    `ResourceApplyAdam` kernel (the one `tf.compat.v1` Adam used, XLA
    included) plus a multiply for its decay: about a fifth of the ops, the
    same numbers to float32 rounding (tests/training/test_fused_adam_w.py;
    tracing and step times side by side: `python bench/fused_adam.py`).

    Gradient clipping, loss scaling, EMA and gradient accumulation are
    Keras' own. With `amsgrad=True`, or for a variable that is not
    float32/float64, the update is Keras' (per variable).

    `kdplug run` trains with it (`make_optimizer("adamw")`, and
    `make_optimizer("adam")`: `weight_decay=0.0`).

    Args:
        *args, **kwargs: those of `keras.optimizers.AdamW`.

    Examples:

    ```python
    optimizer = FusedAdamW(learning_rate=3e-5, weight_decay=0.01,
                           global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    distiller.compile(optimizer=optimizer)
    ```
    """

    def _apply_weight_decay(self, variables):
        # Keras decays every variable before `_backend_update_step`, one
        # schedule call per variable; the decay happens in
        # `_distributed_tf_update_step` instead, in the same order (decay,
        # then the Adam step) with the same learning rate. Keras' update
        # (amsgrad) still decays here.
        if self.amsgrad:
            super()._apply_weight_decay(variables)

    def _distributed_tf_update_step(self, distribution, grads_and_vars, learning_rate):
        """One update of every variable (cross-replica context: once per
        step under any strategy, each variable on each of its devices)."""
        if self.amsgrad:
            return super()._distributed_tf_update_step(
                distribution, grads_and_vars, learning_rate)
        scalars = {}

        def step_scalars(dtype, device, learning_rate):
            """The kernel's scalar inputs in `dtype`, built once per step
            and device (under a strategy, each replica's copy of the
            learning rate lives on its device)."""
            if (dtype, device) not in scalars:
                lr = tf.cast(learning_rate, dtype)
                step = tf.cast(self.iterations + 1, dtype)
                beta_1 = tf.constant(self.beta_1, dtype)
                beta_2 = tf.constant(self.beta_2, dtype)
                scalars[dtype, device] = (
                    {"lr": lr, "beta1": beta_1, "beta2": beta_2,
                     "beta1_power": tf.pow(beta_1, step),
                     "beta2_power": tf.pow(beta_2, step),
                     "epsilon": tf.constant(self.epsilon, dtype)},
                    lr * tf.cast(self.weight_decay, dtype) if self.weight_decay else None,
                )
            return scalars[dtype, device]

        def apply(variable, gradient, learning_rate):
            if variable.dtype.name not in FUSED_DTYPES:
                return self._keras_update(gradient, variable, learning_rate)
            kernel_scalars, decay = step_scalars(variable.dtype, variable.device,
                                                 learning_rate)
            index = self._get_variable_index(variable)
            if decay is not None and self._use_weight_decay(variable):
                variable.assign_sub(variable * decay)
            # a sparse (embedding) gradient is made dense, as Keras' Adam does
            return tf.raw_ops.ResourceApplyAdam(
                var=variable.handle, m=self._momentums[index].value.handle,
                v=self._velocities[index].value.handle,
                grad=tf.cast(tf.convert_to_tensor(gradient), variable.dtype),
                **kernel_scalars)

        for gradient, variable in grads_and_vars:
            distribution.extended.update(variable, apply, args=(gradient, learning_rate),
                                         group=False)

    def _keras_update(self, gradient, variable, learning_rate):
        """Keras' decay and update of one variable (the dtypes the fused
        kernel is not used for)."""
        if self.weight_decay and self._use_weight_decay(variable):
            lr = tf.cast(learning_rate, variable.dtype)
            variable.assign_sub(variable * lr * tf.cast(self.weight_decay, variable.dtype))
        return self.update_step(gradient, variable, learning_rate)
