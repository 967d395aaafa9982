"""`build_training_state`: a compiled model's optimizer and metric variables,
created before `fit` so that its train step is traced once."""

import tensorflow as tf

UNKNOWN_LENGTH = 8  # of the batch of ones (see below)


def build_training_state(model, dataset):
    """Creates `model`'s optimizer and compiled-metric variables now.

    Under the default strategy Keras creates them inside the first traced
    train step, and a `tf.function` that creates variables is traced twice
    (once creating them, once more without): about half of `fit`'s start-up
    on a small model (a 2-layer toy BERT: 2.8 s of tracing instead of 8.9).
    Under a `tf.distribute` strategy Keras builds them before tracing
    itself, so this does nothing there.

    The metrics are built by one eager forward pass on a batch of ones
    shaped like `dataset`'s elements (one example, unknown lengths 8: a
    length-bucketed batch's, long enough for inputs that index positions,
    e.g. a masked-LM head's `mask_positions`), then reset; no data is read,
    so the dataset's shuffling is unchanged.

    Args:
        model: a compiled `keras.Model` (`(x, y)` batches).
        dataset: the `tf.data.Dataset` it will be fitted on.

    Examples:

    ```python
    teacher.compile(optimizer=make_optimizer("adamw", 3e-5, steps),
                    loss=loss, metrics=["accuracy"])
    build_training_state(teacher, train_ds)
    teacher.fit(train_ds, epochs=3)
    ```
    """
    if tf.distribute.has_strategy():
        return
    model.optimizer.build(model.trainable_variables)
    if not model.metrics:
        return
    x, y = tf.nest.map_structure(
        lambda spec: tf.ones([1] + [d or UNKNOWN_LENGTH for d in spec.shape[1:]],
                             spec.dtype),
        dataset.element_spec[:2])
    model.compute_metrics(x, y, model(x, training=False), sample_weight=None)
    model.reset_metrics()
