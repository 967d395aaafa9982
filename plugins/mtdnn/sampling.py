"""Which task each mini-batch comes from (MT-DNN: one task per batch)."""

import math

import numpy as np
import tensorflow as tf

from kdplug.errors import KdplugError

# Resolution of the uniform draws that pick tasks under temperature sampling.
_RESOLUTION = 1 << 30


def sampling_probabilities(sizes, mode="proportional", temperature=1.0):
    """The probability that a batch comes from each task.

    `proportional`: `p_t = n_t / sum(n)` (MT-DNN: every batch of every task
    once per epoch, in random order). `temperature`: `p_t ∝ n_t^(1/T)`;
    `T = 1` is proportional, larger `T` flattens towards uniform, which
    up-samples small tasks.

    Args:
        sizes: training examples per task.
        mode: `proportional` or `temperature`.
        temperature: `T > 0` (temperature mode only).

    Examples:

    >>> sampling_probabilities([300, 100]).tolist()
    [0.75, 0.25]
    >>> sampling_probabilities([400, 100], "temperature", 2.0).round(3).tolist()
    [0.667, 0.333]
    """
    sizes = np.asarray(sizes, dtype="float64")
    if sizes.ndim != 1 or not len(sizes) or (sizes <= 0).any():
        raise KdplugError(f"every task needs training examples, got sizes {sizes.tolist()}")
    if mode == "proportional":
        weights = sizes
    elif mode == "temperature":
        if temperature <= 0:
            raise KdplugError(f"sampling_temperature must be > 0, got {temperature}")
        weights = sizes ** (1.0 / temperature)
    else:
        raise KdplugError(
            f"sampling must be 'proportional' or 'temperature', got {mode!r}"
        )
    return weights / weights.sum()


def batches_per_task(sizes, batch_size):
    """`ceil(n_t / batch_size)` for every task."""
    return [int(math.ceil(n / batch_size)) for n in sizes]


def task_choices(sizes, batch_size, mode="proportional", temperature=1.0, seed=0):
    """A dataset of task indices, one per batch of an epoch.

    An epoch has `sum_t ceil(n_t / batch_size)` batches in both modes.
    `proportional` yields each task's index exactly `ceil(n_t / batch_size)`
    times in an order reshuffled every epoch; `temperature` draws every
    batch's task independently with `sampling_probabilities(...)`, again
    differently every epoch. Both are deterministic for a given `seed` and
    global seed (`keras.utils.set_random_seed`).

    Returns:
        `(dataset of int64, steps per epoch)`.

    Examples:

    ```python
    choices, steps = task_choices([300, 100], 32, "temperature", 2.0, seed=0)
    ```
    """
    counts = batches_per_task(sizes, batch_size)
    steps = sum(counts)
    if mode == "proportional":
        sampling_probabilities(sizes, mode)  # validates the sizes
        order = np.repeat(np.arange(len(counts), dtype="int64"), counts)
        ds = tf.data.Dataset.from_tensor_slices(order).shuffle(
            steps, seed=seed, reshuffle_each_iteration=True
        )
        return ds, steps
    probs = sampling_probabilities(sizes, mode, temperature)
    edges = tf.constant(np.cumsum(probs)[:-1], dtype="float64")

    def pick(value):
        u = tf.cast(tf.math.floormod(value, _RESOLUTION), "float64") / _RESOLUTION
        return tf.searchsorted(edges, tf.reshape(u, [1]), side="right",
                               out_type=tf.int64)[0]

    ds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
    return ds.take(steps).map(pick), steps


def mixture_dataset(task_datasets, sizes, batch_size, mode="proportional",
                    temperature=1.0, seed=0):
    """One epoch of single-task batches drawn across tasks.

    Args:
        task_datasets: one batched dataset per task, all with the same
            element structure (e.g. with a `task` feature that says which
            head to train); each is repeated, so a task drawn more often than
            it has batches (temperature sampling) goes round again.
        sizes: training examples per task (for the schedule).
        batch_size: int; the datasets' batch size.
        mode, temperature, seed: see `task_choices`.

    Returns:
        A dataset with a known cardinality (steps per epoch); every
        iteration is a new epoch with a new task order.
    """
    choices, steps = task_choices(sizes, batch_size, mode, temperature, seed)
    mixed = tf.data.Dataset.choose_from_datasets(
        [ds.repeat() for ds in task_datasets], choices
    )
    return mixed.apply(tf.data.experimental.assert_cardinality(steps))
