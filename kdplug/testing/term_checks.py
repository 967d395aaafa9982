"""`run_term_test`: a loss term against kdplug's `Term` contract."""

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any
from typing import Optional

import keras
import numpy as np
import tensorflow as tf

from kdplug.testing.serialization_checks import run_serialization_test


def run_term_test(term: keras.layers.Layer, teacher: Mapping[str, Any],
                  student: Mapping[str, Any], batch: Mapping[str, Any],
                  expected: Optional[Any] = None, rtol: float = 1e-5,
                  atol: float = 1e-6, padding: bool = True,
                  jit_compile: bool = True, keras_file: bool = True) -> np.ndarray:
    """Checks a loss term against the `Term` contract on one batch, what
    every term's tests would otherwise write again.

    The contract (docs/architecture.md, "The contracts" and "Loss scaling
    under `tf.distribute`"): a term returns one unweighted loss per example,
    shape `(batch,)`; the `Distiller` multiplies it by the term's `weight`
    and divides the sum by the *global* batch, so each replica's share of a
    batch must give the same losses as the whole batch does on one device.
    Checked, in order:

    - it reads only the taps it declares (`required_teacher_taps()`,
      `required_student_taps()`: it is called with those alone) and its
      `check_taps` accepts them;
    - the losses: float32, shape `(batch,)`, finite, equal to `expected`
      when given;
    - per example: the two halves of the batch, and its first example
      alone (shape `(1,)`), give the whole batch's losses; the batch's
      examples must give different losses, or a term that mixed them would
      pass;
    - with `padding` and a `padding_mask` in the batch: the taps' values at
      padded tokens do not change the losses, and an example without a
      valid token has the loss 0. Token axes are those of kdplug's taps:
      axis 1 of a `(batch, seq, width)` tap (`hidden/<i>`, `embeddings`),
      axes 2 and 3 of a `(batch, heads, seq, seq)` one (`attention/<i>`);
    - its `weight` is a non-trainable scalar variable holding the config's
      `weight`, and changing it leaves the losses alone (unweighted);
    - `run_serialization_test` (config, `serialize_keras_object` and, with
      `keras_file`, a `.keras` file), and the term rebuilt from its config
      with the term's weights gives the same losses;
    - with `jit_compile`, the same losses under `tf.function(jit_compile=True)`
      (`training.jit_compile` compiles a run's steps with XLA);
    - the gradients with respect to the student's float taps are finite, and
      reach at least one of them.

    Args:
        term: the `kdplug.terms.Term` to check.
        teacher: dict. Teacher taps (`{"logits": ...}`); arrays whose first
            axis is the batch. May hold taps the term does not read.
        student: dict. Student taps, likewise.
        batch: dict. The batch's features (`labels`, `padding_mask`, ...);
            arrays are sliced along their first axis, other values (None)
            passed as they are.
        expected: optional array `(batch,)`: the losses computed by hand.
        rtol: float. Relative tolerance of every comparison.
        atol: float. Absolute tolerance of every comparison.
        padding: bool. Whether to check that padded tokens do not count
            (when the batch holds a `padding_mask`).
        jit_compile: bool. Whether to compare with an XLA-compiled call.
        keras_file: bool. Whether to save and load the term as a `.keras`
            file.

    Returns:
        The per-example losses on the whole batch, as a numpy array.

    Examples:

    ```python
    import numpy as np
    from kdplug.testing import run_term_test

    t = np.array([[1.0, -1.0], [0.0, 2.0]], "float32")
    s = np.zeros((2, 2), "float32")
    run_term_test(LogitMSE(weight=2.0), {"logits": t}, {"logits": s}, {},
                  expected=[1.0, 2.0])
    ```
    """
    name = type(term).__name__
    teacher = _declared(teacher, term.required_teacher_taps(), name, "teacher")
    student = _declared(student, term.required_student_taps(), name, "student")
    batch = {k: _numpy(v) for k, v in batch.items()}
    term.check_taps(teacher, student)
    close = {"rtol": rtol, "atol": atol}

    losses = _call(term, teacher, student, batch)
    size = _batch_size(student or teacher)
    assert losses.dtype == np.float32, f"{name} returned {losses.dtype}, not float32"
    assert losses.shape == (size,), (
        f"{name} returned shape {losses.shape}: a term returns one loss per example, "
        f"({size},) here")
    assert np.isfinite(losses).all(), f"{name} returned {losses}"
    if expected is not None:
        np.testing.assert_allclose(losses, expected, **close,
                                   err_msg=f"{name}: not the expected losses")

    assert size >= 2, f"run_term_test needs a batch of 2 or more examples, got {size}"
    assert np.ptp(losses) > atol, (
        f"{name} gave every example the loss {losses[0]}: give examples whose "
        "losses differ, or a term mixing its batch would pass")
    parts = [_call(term, *_rows((teacher, student, batch), rows))
             for rows in (slice(0, size // 2), slice(size // 2, size), slice(0, 1))]
    np.testing.assert_allclose(
        np.concatenate(parts[:2]), losses, **close,
        err_msg=f"{name}: the batch's two halves give other losses than the whole "
        "batch (the term reads across examples, or averages over the batch)")
    assert parts[2].shape == (1,), (
        f"{name} returned shape {parts[2].shape} for one example, not (1,)")

    if padding and batch.get("padding_mask") is not None:
        _assert_padding_ignored(term, teacher, student, batch, losses, close, name)

    config = term.get_config()
    assert isinstance(term.weight, keras.Variable) and tuple(term.weight.shape) == (), (
        f"{name}.weight is not a scalar variable")
    assert not any(w is term.weight for w in term.trainable_weights), (
        f"{name}.weight is trainable")

    clone = run_serialization_test(term, keras_file=keras_file)
    assert np.isclose(float(keras.ops.convert_to_numpy(clone.weight)), config["weight"]), (
        f"{name}: the rebuilt term's weight is not its config's {config['weight']}")
    clone.set_weights(term.get_weights())
    clone.weight.assign(2.0 * float(config["weight"]) + 1.0)
    np.testing.assert_allclose(
        _call(clone, teacher, student, batch), losses, **close,
        err_msg=f"{name}: rebuilt from its config with the same weights and another "
        "`weight`, it gives other losses (a config that loses an argument, or a "
        "loss multiplied by the weight: the Distiller applies it)")

    if jit_compile:
        compiled = tf.function(term.__call__, jit_compile=True)
        np.testing.assert_allclose(
            keras.ops.convert_to_numpy(compiled(teacher, student, batch)), losses,
            **close, err_msg=f"{name}: other losses under XLA")

    _assert_finite_gradients(term, teacher, student, batch, name)
    return losses


def _declared(taps: Mapping[str, Any], names: Iterable[str], term: str,
              model: str) -> dict:
    """The taps the term declares, only: one it reads without declaring
    it then fails its call with a KeyError."""
    missing = sorted(set(names) - set(taps))
    assert not missing, f"{term} declares {model} taps {missing} the test did not give"
    return {k: _numpy(taps[k]) for k in names}


def _numpy(value: Any) -> Any:
    return value if value is None else keras.ops.convert_to_numpy(value)


def _call(term: keras.layers.Layer, teacher: dict, student: dict,
          batch: dict) -> np.ndarray:
    return np.asarray(keras.ops.convert_to_numpy(term(teacher, student, batch)))


def _batch_size(taps: dict) -> int:
    return int(np.shape(next(iter(taps.values())))[0])


def _rows(dicts: tuple, rows: slice) -> list:
    return [{k: v[rows] if np.ndim(v) else v for k, v in d.items()} for d in dicts]


def _assert_padding_ignored(term: keras.layers.Layer, teacher: dict, student: dict,
                            batch: dict, losses: np.ndarray, close: dict,
                            name: str) -> None:
    padded = np.asarray(batch["padding_mask"]) == 0
    changed = [_garbage_at(padded, taps) for taps in (teacher, student)]
    np.testing.assert_allclose(
        _call(term, *changed, batch), losses, **close,
        err_msg=f"{name}: other values at padded tokens change the losses (pass "
        "padding=False if the term reads padded tokens)")
    empty = padded.all(axis=-1)
    assert (losses[empty] == 0.0).all(), (
        f"{name}: examples without a valid token have losses {losses[empty]}, not 0")


# rank -> token axes: (batch, seq, width) and (batch, heads, seq, seq) taps
_TOKEN_AXES = {3: (1,), 4: (2, 3)}


def _garbage_at(padded: np.ndarray, taps: dict) -> dict:
    """`taps` with every float value at a padded token changed (x -> 3x + 7:
    finite, positive where x is a probability)."""
    changed = {}
    for tap, value in taps.items():
        at = np.zeros(np.shape(value), bool)
        if np.issubdtype(value.dtype, np.floating):
            for axis in _TOKEN_AXES.get(value.ndim, ()):
                if value.shape[axis] == padded.shape[1]:
                    shape = [padded.shape[0]] + [1] * (value.ndim - 1)
                    shape[axis] = padded.shape[1]
                    at = at | padded.reshape(shape)
        changed[tap] = np.where(at, 3 * value + 7, value).astype(value.dtype)
    return changed


def _assert_finite_gradients(term: keras.layers.Layer, teacher: dict, student: dict,
                             batch: dict, name: str) -> None:
    floats = {k: tf.constant(v) for k, v in student.items()
              if np.issubdtype(np.asarray(v).dtype, np.floating)}
    with tf.GradientTape() as tape:
        tape.watch(list(floats.values()))
        total = keras.ops.sum(term(teacher, {**student, **floats}, batch))
    grads = tape.gradient(total, floats)
    reached = {k: g for k, g in grads.items() if g is not None}
    assert reached or not floats, f"{name}: no gradient reaches the student's taps"
    for tap, grad in reached.items():
        assert np.isfinite(grad.numpy()).all(), f"{name}: non-finite gradient for {tap}"
