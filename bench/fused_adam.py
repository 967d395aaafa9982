"""`FusedAdamW` against Keras' AdamW, measured side by side.

    python bench/fused_adam.py [--rounds 3] [--steps 20] [--toy-runs 3]
                               [--render-only] [--results PATH]
                               [--write-docs [PATH]]

(a) Per model, BERT classifiers of two sizes with random weights (the shapes
    are what matters): kdplug's 2-layer toy BERT (width 16, the test suite's)
    and MiniLM-L6-H384 (the offline teacher's shapes: 6 layers, width 384,
    vocabulary 30,522), each compiled with `make_optimizer("adamw")`'s
    settings (warm-up/decay schedule, decay 0.01 without biases and
    layer-norm scales, global clipnorm 1.0) once with Keras' AdamW and once
    with `FusedAdamW`: the graph ops of the traced train step, the first
    `train_on_batch` (tracing and the first step) and the median of
    `--steps` later steps (batch 32, length 48 for MiniLM, 16 for the toy).
    The two optimizers alternate within every round, their order swapped
    between rounds, so machine noise hits both alike.
(b) `--toy-runs N`: the test suite's toy `kdplug run` (kd, 2-layer teacher
    fine-tuned 1 epoch, student 2 epochs, `kdplug.testing.write_toy_config`)
    N times with each optimizer, alternating: the median wall time.

The measurement is kept in `bench/results/fused_adam.json` (`--render-only`
rewrites the section from it); `--write-docs` puts the tables between the
`<!-- fused-adam:start/end -->` markers of docs/performance.md (or PATH; text
outside them is kept).
"""

import argparse
import contextlib
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchlib import PERFORMANCE_PAGE  # noqa: E402  (bench/ is the script's folder)
from benchlib import add_measurement_arguments  # noqa: E402
from benchlib import machine  # noqa: E402
from benchlib import measurement_section  # noqa: E402
from benchlib import now  # noqa: E402
from benchlib import usable_cpus  # noqa: E402
from kdplug import testing  # noqa: E402
from kdplug.config import load_config  # noqa: E402
from kdplug.models import BertClassifier  # noqa: E402
from kdplug.run.experiment import Experiment  # noqa: E402
from kdplug.testing.toy_config import write_toy_config  # noqa: E402
from kdplug.training import optimizers  # noqa: E402
from kdplug.training.fused_adam_w import FusedAdamW  # noqa: E402

BATCH = 32
MODELS = {  # name -> (backbone arguments, sequence length)
    "toy BERT (2 layers, width 16)": (None, testing.SEQUENCE_LENGTH),
    "MiniLM-L6-H384 shapes": ({"vocabulary_size": 30522, "num_layers": 6, "num_heads": 12,
                               "hidden_dim": 384, "intermediate_dim": 1536,
                               "max_sequence_length": 512}, 48),
}
OPTIMIZERS = {"Keras AdamW": keras.optimizers.AdamW, "FusedAdamW": FusedAdamW}


def make(cls, total_steps):
    """`make_optimizer("adamw", 5e-5, total_steps, 0.1, 0.01)`'s settings
    with `cls` as the optimizer."""
    optimizer = cls(optimizers.WarmupLinearDecay(5e-5, total_steps, total_steps // 10),
                    weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer


def build(model_name, cls, steps):
    keras.utils.set_random_seed(0)
    backbone_args, seq = MODELS[model_name]
    if backbone_args is None:
        model = testing.tiny_bert_classifier(num_layers=2)
    else:
        model = BertClassifier(keras_hub.models.BertBackbone(**backbone_args), 2)
    model.compile(optimizer=make(cls, steps + 1), jit_compile=False,
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    x, y = testing.toy_arrays(num_examples=BATCH, sequence_length=seq,
                              vocabulary_size=(backbone_args or {}).get(
                                  "vocabulary_size", testing.VOCAB_SIZE))
    return model, (x, y)


def time_train_steps(model_name, cls, steps):
    """`(first step s, [later step s])`."""
    model, (x, y) = build(model_name, cls, steps)
    begin = time.perf_counter()
    model.train_on_batch(x, y)
    first = time.perf_counter() - begin
    later = []
    for _ in range(steps):
        begin = time.perf_counter()
        model.train_on_batch(x, y)
        later.append(time.perf_counter() - begin)
    return first, later


def traced_ops(model_name, cls):
    """Graph ops of the optimizer's update alone, traced for the model's
    variables."""
    model, _ = build(model_name, cls, 1)
    variables = model.trainable_variables
    model.optimizer.build(variables)
    apply = tf.function(lambda grads: model.optimizer.apply(grads, variables))
    grads = [tf.zeros(v.shape, v.dtype) for v in variables]
    return len(apply.get_concrete_function(grads).graph.get_operations()), len(variables)


def alternating(names, rounds):
    """The names in order on even rounds, reversed on odd ones."""
    for r in range(rounds):
        yield from (names if r % 2 == 0 else names[::-1])


def bench_steps(rounds, steps, models=tuple(MODELS)):
    """`{model: {optimizer: {optimizer_ops, variables, first_s, later_s}}}`:
    `first_s` the first step's seconds per round, `later_s` the later
    steps' seconds per round (a list per round)."""
    rows = {}
    for model_name in models:
        rows[model_name] = {name: {"first_s": [], "later_s": []} for name in OPTIMIZERS}
        for name in alternating(list(OPTIMIZERS), rounds):
            first, later = time_train_steps(model_name, OPTIMIZERS[name], steps)
            rows[model_name][name]["first_s"].append(first)
            rows[model_name][name]["later_s"].append(later)
        for name, cls in OPTIMIZERS.items():
            ops, num_vars = traced_ops(model_name, cls)
            row = rows[model_name][name]
            rows[model_name][name] = {"optimizer_ops": ops, "variables": num_vars, **row}
            print(model_name, name, ops, "ops,", num_vars, "variables, first step",
                  [round(t, 2) for t in row["first_s"]], "s", flush=True)
    return rows


@contextlib.contextmanager
def optimizer_class(cls):
    """`make_optimizer` (what `kdplug run` trains with) builds `cls`."""
    saved = optimizers.FusedAdamW
    optimizers.FusedAdamW = cls
    try:
        yield
    finally:
        optimizers.FusedAdamW = saved


def keras_adamw(*args, name=None, **kwargs):
    """Keras' AdamW or Adam where `make_optimizer` builds `FusedAdamW`."""
    if kwargs.get("weight_decay") == 0.0:
        kwargs.pop("weight_decay")
        return keras.optimizers.Adam(*args, **kwargs)
    return keras.optimizers.AdamW(*args, **kwargs)


def bench_toy_runs(runs):
    """`{optimizer: [wall s per run]}`."""
    walls = {"Keras AdamW": [], "FusedAdamW": []}
    factories = {"Keras AdamW": keras_adamw, "FusedAdamW": FusedAdamW}
    for i, name in enumerate(alternating(list(walls), runs)):
        with tempfile.TemporaryDirectory() as folder:
            os.environ["KDPLUG_CACHE_DIR"] = os.path.join(folder, "cache")
            keras.utils.set_random_seed(0)
            path = write_toy_config(folder, {"name": "kd"},
                                    student={"kind": "truncated", "layers": [1]})
            with optimizer_class(factories[name]):
                begin = time.perf_counter()
                Experiment(load_config(path)).run()
                walls[name].append(time.perf_counter() - begin)
        print("toy run", name, round(walls[name][-1], 1), flush=True)
    return walls


def measure(args):
    """The measurement, a JSON-able dict: the machine, the settings, per
    model and optimizer the graph ops, variables and step seconds per round
    (`bench_steps`), and the toy runs' wall seconds (`bench_toy_runs`; None
    with `--toy-runs 0`)."""
    tf.config.threading.set_intra_op_parallelism_threads(usable_cpus())
    models = bench_steps(args.rounds, args.steps)
    toy = bench_toy_runs(args.toy_runs) if args.toy_runs else None
    return {
        "machine": machine(gpu_hidden=False),
        "settings": {"rounds": args.rounds, "steps": args.steps,
                     "toy_runs": args.toy_runs, "batch_size": BATCH},
        "finished": now(),
        "models": models,
        "toy_runs_s": toy,
    }


def step_medians(row):
    """`(first, later)` step seconds of one model and optimizer: the median
    over rounds of the first step, and of each round's median later step."""
    return (statistics.median(row["first_s"]),
            statistics.median(statistics.median(later) for later in row["later_s"]))


def render(result):
    """The `fused-adam` section of docs/performance.md from a measurement."""
    m, s = result["machine"], result["settings"]
    lines = [
        "### FusedAdamW against Keras' AdamW",
        "",
        f"Measured {result['finished'][:10]} by `python bench/fused_adam.py "
        f"--rounds {s['rounds']} --steps {s['steps']} --toy-runs {s['toy_runs']}` on "
        f"{m['cpus']} CPU core(s) ({m['cpu']}), TensorFlow {m['tensorflow']}, "
        f"Keras {m['keras']}; medians, the two optimizers alternating "
        f"(`make_optimizer('adamw')`'s settings, batch {s['batch_size']}, no XLA).",
        "",
        "| model | optimizer | variables | optimizer graph ops | first step (s) "
        "| later step (ms) |",
        "|---|---|---:|---:|---:|---:|",
    ]
    for model_name, optimizer_rows in result["models"].items():
        for name, row in optimizer_rows.items():
            first, later = step_medians(row)
            lines.append(f"| {model_name} | {name} | {row['variables']} | "
                         f"{row['optimizer_ops']:,} | {first:.2f} | {1000 * later:.1f} |")
    lines.append("")
    for model_name, optimizer_rows in result["models"].items():
        keras_row, fused_row = optimizer_rows["Keras AdamW"], optimizer_rows["FusedAdamW"]
        (keras_first, keras_later), (fused_first, fused_later) = (
            step_medians(keras_row), step_medians(fused_row))
        ops = fused_row["optimizer_ops"] / keras_row["optimizer_ops"]
        lines.append(
            f"- {model_name}: graph ops x{ops:.2f}, "
            f"first step x{fused_first / keras_first:.2f}, "
            f"later steps x{fused_later / keras_later:.2f} (FusedAdamW / Keras).")
    toy = result["toy_runs_s"]
    if toy:
        keras_wall = statistics.median(toy["Keras AdamW"])
        fused_wall = statistics.median(toy["FusedAdamW"])
        lines.append(
            f"- The suite's toy `kdplug run` ({s['toy_runs']} runs each): "
            f"{keras_wall:.1f} s with Keras' AdamW, {fused_wall:.1f} s "
            f"with FusedAdamW (x{fused_wall / keras_wall:.2f}).")
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=20,
                        help="later steps timed per model, optimizer and round")
    parser.add_argument("--toy-runs", type=int, default=3,
                        help="toy kdplug runs per optimizer (0: none)")
    add_measurement_arguments(parser, "fused_adam", PERFORMANCE_PAGE)
    args = parser.parse_args(argv)
    measurement_section(args, "fused-adam", lambda: measure(args), render)


if __name__ == "__main__":
    main()
