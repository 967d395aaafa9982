"""Schedules for loss-term weights and temperatures, as a Keras callback.

`TermSchedule` is the callback; `kdplug.config.ScheduleConfig` is one entry of a config's
`training.schedules:` list, checked against the method's stages by
`check_schedules` and turned into one stage's callbacks by `stage_schedules`.
"""

import math

import keras

from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.errors import did_you_mean

KINDS = ("constant", "linear", "cosine")


class TermSchedule(keras.callbacks.Callback):
    """Sets one scalar variable of a loss term (its `weight`, or e.g.
    `temperature`) before every training batch.

    The value at global step `t` (the optimizer's `iterations`, so a resumed
    run continues the schedule), with
    `p = clip((t - start_step) / steps, 0, 1)`:

    - `constant`: `start` (ignores `end`);
    - `linear`: `start + (end - start) * p`;
    - `cosine`: `end + (start - end) * (1 + cos(pi * p)) / 2`.

    Before `start_step` the value is `start`; after `start_step + steps` it
    stays at `end`. Works with any method: the term is found by name among
    the `Distiller`'s `terms`, or passed directly.

    Args:
        term: a `kdplug.terms.Term`, or its name (looked up in
            `model.terms` when training starts).
        kind: `"constant"`, `"linear"` or `"cosine"`.
        start: float. Value at the start of the schedule.
        end: float. Value at its end (defaults to `start`).
        steps: int. Length of the schedule in optimizer steps; None means
            the whole `fit()` call (`epochs * steps per epoch`).
        start_step: int. Global step at which the schedule starts.
        variable: str. The term attribute to set: `"weight"` (default) or
            any other non-trainable scalar variable, e.g. `"temperature"`.
        required: bool. When False, a model without a term of this name
            (e.g. another stage of a multi-stage method) is left alone
            instead of raising.

    Examples:

    ```python
    # Anneal the soft-target temperature from 8 to 1, and warm the
    # patient loss up over the first 500 steps.
    callbacks = [
        TermSchedule("soft_ce", "linear", 8.0, 1.0, variable="temperature"),
        TermSchedule("patient_cls", "cosine", 0.0, 100.0, steps=500),
    ]
    distiller.fit(ds, epochs=3, callbacks=callbacks)
    ```
    """

    def __init__(self, term, kind="linear", start=1.0, end=None, steps=None,
                 start_step=0, variable="weight", required=True):
        super().__init__()
        if kind not in KINDS:
            raise KdplugError(f"schedule kind must be one of {KINDS}, got {kind!r}")
        if steps is not None and steps < 1:
            raise KdplugError(f"schedule steps must be >= 1, got {steps}")
        self.term = term
        self.kind = kind
        self.start = float(start)
        self.end = self.start if end is None else float(end)
        self.steps = None if steps is None else int(steps)
        self.start_step = int(start_step)
        self.variable = variable
        self.required = bool(required)
        self._target = None
        self._steps = self.steps
        self._step = 0

    def value(self, step, steps=None):
        """The scheduled value at global step `step` (a pure function)."""
        steps = steps or self.steps or 1
        progress = min(max((step - self.start_step) / steps, 0.0), 1.0)
        if self.kind == "constant":
            return self.start
        if self.kind == "linear":
            return self.start + (self.end - self.start) * progress
        return self.end + (self.start - self.end) * 0.5 * (
            1.0 + math.cos(math.pi * progress)
        )

    def on_train_begin(self, logs=None):
        term = self._resolve_term()
        if term is None:
            self._target = None
            return
        target = getattr(term, self.variable, None)
        if not isinstance(target, keras.Variable) or tuple(target.shape) != ():
            raise KdplugError(
                f"term {term.name!r} has no scalar variable {self.variable!r} "
                "to schedule"
            )
        self._target = target
        self._steps = self.steps
        if self._steps is None:  # the whole fit() call, recomputed per call
            epochs = (self.params or {}).get("epochs") or 1
            per_epoch = (self.params or {}).get("steps") or 1
            self._steps = epochs * per_epoch
        self._step = 0
        self._apply()

    def on_train_batch_begin(self, batch, logs=None):
        self._apply()

    def on_train_batch_end(self, batch, logs=None):
        self._step += 1

    def on_train_end(self, logs=None):
        # Leave the term at the schedule's value for the steps taken (its
        # `end` once the schedule has run its course), so what is saved
        # after training is the schedule's final value.
        self._apply()

    def _apply(self):
        if self._target is None:
            return
        self._target.assign(self.value(self._global_step(), self._steps))

    def _global_step(self):
        # The optimizer's step counter is exact under steps_per_execution and
        # survives ResumableBackup; the local counter is the fallback.
        optimizer = getattr(self.model, "optimizer", None)
        iterations = getattr(optimizer, "iterations", None)
        if iterations is None:
            return self._step
        return int(keras.ops.convert_to_numpy(iterations))

    def _resolve_term(self):
        if not isinstance(self.term, str):
            return self.term
        terms = getattr(self.model, "terms", None) or []
        for term in terms:
            if term.name == self.term:
                return term
        if not self.required:
            return None
        names = ", ".join(t.name for t in terms) or "none"
        raise KdplugError(
            f"TermSchedule: no loss term named {self.term!r}; the model's "
            f"terms are: {names}"
        )

    def get_config(self):
        return {
            "term": self.term if isinstance(self.term, str) else self.term.name,
            "kind": self.kind,
            "start": self.start,
            "end": self.end,
            "steps": self.steps,
            "start_step": self.start_step,
            "variable": self.variable,
            "required": self.required,
        }


def scalar_variables(term):
    """Names of the term's attributes that are scalar Keras variables
    (what a schedule can set: `weight`, and e.g. `temperature`)."""
    return sorted(
        name for name, value in vars(term).items()
        if isinstance(value, keras.Variable) and tuple(value.shape) == ()
    )


def check_schedules(schedules, stages, file=None, path="training.schedules"):
    """Checks `training.schedules` against a method's built stages.

    Every schedule's term must exist in at least one (selected) stage, and
    have the scheduled scalar variable there; `stages:` must name existing
    stages. Raises `ConfigError` naming the field, the value and the terms
    of every stage.

    Args:
        schedules: a list of `ScheduleConfig`.
        stages: the method's `kdplug.Stage`s.
        file: the config file, for messages.
        path: the dotted path of the list in the config.
    """
    stage_names = [stage.name for stage in stages]
    for i, schedule in enumerate(schedules):
        field = f"{path}[{i}]"
        if schedule.stages is not None:
            for name in schedule.stages:
                if name not in stage_names:
                    raise ConfigError(
                        f"unknown stage {name!r}{did_you_mean(name, stage_names)}; "
                        f"this method's stages: {', '.join(stage_names)}",
                        file, f"{field}.stages", schedule.stages,
                    )
        selected = [s for s in stages
                    if schedule.stages is None or s.name in schedule.stages]
        found = [(s, t) for s in selected for t in s.terms if t.name == schedule.term]
        if not found:
            names = list(dict.fromkeys(t.name for s in selected for t in s.terms))
            where = ("any stage" if schedule.stages is None
                     else "stage(s) " + ", ".join(schedule.stages))
            by_stage = "; ".join(
                f"{s.name}: {', '.join(t.name for t in s.terms) or 'none'}"
                for s in selected
            )
            raise ConfigError(
                f"no loss term named {schedule.term!r} in {where}"
                f"{did_you_mean(schedule.term, names)}; terms by stage: {by_stage}",
                file, f"{field}.term", schedule.term,
            )
        for stage, term in found:
            variables = scalar_variables(term)
            if schedule.variable not in variables:
                raise ConfigError(
                    f"term {term.name!r} (stage {stage.name}) has no scalar "
                    f"variable {schedule.variable!r}"
                    f"{did_you_mean(schedule.variable, variables)}; it has: "
                    + ", ".join(variables),
                    file, f"{field}.variable", schedule.variable,
                )


def stage_schedules(schedules, stage, total_steps=None):
    """The `TermSchedule` callbacks of `schedules` that apply to `stage`.

    Args:
        schedules: a list of `ScheduleConfig` (already checked).
        stage: a `kdplug.Stage`.
        total_steps: the stage's optimizer steps (epochs x steps per epoch);
            a schedule with `steps: null` runs from its `start_step` to there.
            None or unknown (<= 0): the whole `fit()` call, from Keras' params.
    """
    total = total_steps if total_steps and total_steps > 0 else None
    callbacks = []
    for schedule in schedules:
        if schedule.stages is not None and stage.name not in schedule.stages:
            continue
        term = next((t for t in stage.terms if t.name == schedule.term), None)
        if term is None:
            continue
        steps = schedule.steps
        if steps is None and total is not None:
            steps = max(total - schedule.start_step, 1)
        callbacks.append(TermSchedule(
            term, schedule.kind, schedule.start, schedule.end, steps=steps,
            start_step=schedule.start_step, variable=schedule.variable,
        ))
    return callbacks
