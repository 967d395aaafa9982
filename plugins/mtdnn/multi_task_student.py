import keras
from keras import ops

from kdplug import keys
from kdplug.errors import KdplugError
from kdplug.models import deserialize_nested
from kdplug_plugins.mtdnn.multi_task_term import head_specs


@keras.saving.register_keras_serializable(package="kdplug_mtdnn")
class MultiTaskStudent(keras.Model):
    """A shared encoder with one output head per task (MT-DNN).

    The encoder is any kdplug model that offers the `pooled` tap (the
    students that `truncated`, `narrow` and `bottleneck` build); each task's
    head is a dense layer on the dropped-out pooled vector, with `C` outputs
    for a `C`-class task and 1 for a regression task. The encoder's own
    classifier is not used.

    `call()` returns `{task name: outputs}`. `taps()` offers `logits/<task>`
    (one head), `logits` (every head's outputs concatenated in task order,
    which `kdplug.Distiller` always asks for), `pooled` and every tap of the
    encoder (`hidden/<i>`, `attention/<i>`, ...). Only the heads asked for
    are run.

    Args:
        encoder: a kdplug model with `taps(inputs, names, training)` offering
            `pooled` (e.g. a `kdplug.models.BertClassifier`).
        tasks: list of `{"name", "type", "num_outputs"}` mappings, `type`
            `classification` or `regression`.
        dropout: float. Dropout on the pooled vector before the heads.

    Examples:

    ```python
    encoder = truncated_bert(teacher, [0, 2, 4], num_classes=2)
    student = MultiTaskStudent(encoder, [
        {"name": "sst", "type": "classification", "num_outputs": 2},
        {"name": "stsb", "type": "regression", "num_outputs": 1},
    ])
    outputs = student(inputs)            # {"sst": (B, 2), "stsb": (B, 1)}
    taps = student.taps(inputs, ["logits/stsb", "hidden/3"])
    student.save("student.keras")
    ```
    """

    input_keys = keys.TOKEN_INPUTS

    def __init__(self, encoder, tasks, dropout=0.1, **kwargs):
        super().__init__(**kwargs)
        if "pooled" not in encoder.available_taps():
            raise KdplugError(
                f"{type(encoder).__name__} {encoder.name!r} has no 'pooled' tap; "
                "a multi-task student needs a transformer encoder (student "
                "kinds truncated, narrow, bottleneck)"
            )
        self.encoder = encoder
        self.tasks = head_specs(tasks)
        self.dropout = float(dropout)
        self.head_dropout = keras.layers.Dropout(self.dropout, name="head_dropout")
        width = encoder.tap_width("pooled")
        self.heads = []
        for spec in self.tasks:
            head = keras.layers.Dense(
                spec["num_outputs"],
                kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
                name=f"head_{spec['name']}",
            )
            head.build((None, width))
            self.heads.append(head)
        self.built = True

    @property
    def task_names(self):
        return [spec["name"] for spec in self.tasks]

    @property
    def num_layers(self):
        return self.encoder.num_layers

    @property
    def hidden_dim(self):
        return self.encoder.hidden_dim

    def available_taps(self):
        own = ["logits"] + [f"logits/{n}" for n in self.task_names]
        return [t for t in self.encoder.available_taps() if t != "logits"] + own

    def tap_width(self, name):
        if name == "logits":
            return sum(spec["num_outputs"] for spec in self.tasks)
        if name.startswith("logits/"):
            return self.tasks[self._index(name[len("logits/"):])]["num_outputs"]
        return self.encoder.tap_width(name)

    def flops_per_example(self, sequence_length):
        width = self.encoder.tap_width("pooled")
        heads = sum(2 * width * spec["num_outputs"] for spec in self.tasks)
        # The encoder's own (unused) classifier is part of its count.
        classifier = 2 * width * getattr(self.encoder, "num_classes", 0)
        return self.encoder.flops_per_example(sequence_length) - classifier + heads

    def call(self, inputs, training=False):
        names = [f"logits/{n}" for n in self.task_names]
        taps = self.taps(inputs, names, training=training)
        return {n: taps[f"logits/{n}"] for n in self.task_names}

    def taps(self, inputs, names=("logits",), training=False):
        names = set(names)
        unknown = names - set(self.available_taps())
        if unknown:
            raise KdplugError(
                f"{self.name} has no tap(s) {sorted(unknown)}; it offers "
                f"logits, logits/<task> for tasks {self.task_names}, and its "
                "encoder's taps (pooled, hidden/<i>, ...)"
            )
        heads = {n for n in names if n == "logits" or n.startswith("logits/")}
        wanted = [i for i, n in enumerate(self.task_names)
                  if "logits" in heads or f"logits/{n}" in heads]
        encoder_names = (names - heads) | ({"pooled"} if heads else set())
        out = dict(self.encoder.taps(inputs, encoder_names, training=training))
        if heads:
            x = self.head_dropout(out["pooled"], training=training)
            for i in wanted:
                out[f"logits/{self.task_names[i]}"] = self.heads[i](x)
            if "logits" in heads:
                out["logits"] = ops.concatenate(
                    [out[f"logits/{n}"] for n in self.task_names], axis=-1
                )
        return {n: out[n] for n in names}

    def _index(self, task):
        if task not in self.task_names:
            raise KdplugError(f"no task {task!r}; tasks: {self.task_names}")
        return self.task_names.index(task)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "encoder": keras.saving.serialize_keras_object(self.encoder),
                "tasks": [dict(spec) for spec in self.tasks],
                "dropout": self.dropout,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**deserialize_nested(config, "encoder"))
