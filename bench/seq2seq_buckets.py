"""Length buckets for `cmlm-seq2seq` students (`Seq2SeqLengthBuckets`),
measured side by side.

    python bench/seq2seq_buckets.py [--batches 24] [--rounds 4] [--steps 3]

On the real task (configs/cmlm_seq2seq.yaml: punctuation restoration of
the bundled movie snippets, the MiniLM word pieces, sources up to 60 and
targets up to 64 pieces, batch 64):

(a) the padding fraction of the decoder positions the student is fed in
    one epoch (what its 30,522-way output layer projects): padded to 65,
    and with the config's length buckets (`window: 16, multiple: 8`);
(b) the student's train-step throughput on those batches: the config's
    Transformer (3 + 3 layers, width 256), the method's terms (0.5 top-K
    soft cross-entropy + 0.5 MLE) on random stand-ins for the teacher's
    top-8 soft labels, XLA, every shape compiled first; the variants run
    in interleaved rounds (`--steps` steps of each per round, the order
    alternating), so machine noise hits them alike.
"""

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import yaml  # noqa: E402

from benchlib import ROOT  # noqa: E402  (bench/ is the script's folder)
from benchlib import add_interleaved_arguments  # noqa: E402
from benchlib import cpu_model  # noqa: E402
from benchlib import interleaved_rates  # noqa: E402
from benchlib import padding_stats  # noqa: E402
from benchlib import usable_cpus  # noqa: E402
from kdplug import Distiller  # noqa: E402
from kdplug.config import config_from_dict  # noqa: E402
from kdplug.run.context import RunContext  # noqa: E402
from kdplug.run.teacher_setup import TeacherSetup  # noqa: E402
from kdplug_plugins.cmlm_seq2seq.seq2seq_data import Seq2SeqData  # noqa: E402
from kdplug_plugins.cmlm_seq2seq.seq2seq_encoder import Seq2SeqEncoder  # noqa: E402

CONFIG = os.path.join(ROOT, "configs", "cmlm_seq2seq.yaml")
VARIANTS = {"padded": None, "buckets (window 16, multiple 8)": True}


def contexts():
    """`{variant: (RunContext, method)}`: the config with and without
    `training.length_buckets`."""
    with open(CONFIG, encoding="utf-8") as f:
        doc = yaml.safe_load(f)
    out = {}
    for name, buckets in VARIANTS.items():
        doc["training"]["length_buckets"] = buckets
        context = RunContext.create(config_from_dict(doc, file=CONFIG))
        out[name] = (context, context.method())
    return out


def datasets(variants):
    """`{variant: training dataset}` (the runner's own `_dataset`, random
    top-K stand-ins for the soft labels) and the pairs."""
    from kdplug_plugins.cmlm_seq2seq.cmlm_seq2seq_runner import CmlmSeq2SeqRunner

    context, method = next(iter(variants.values()))
    cfg, mcfg = context.config, method.config
    _, tokenizer, _ = TeacherSetup(context).load(2)
    data = Seq2SeqData.read(cfg.data, mcfg.source_column, mcfg.target_column,
                            cfg.resolve_path, cfg.seed)
    encoder = Seq2SeqEncoder(tokenizer, mcfg.max_source_length, mcfg.max_target_length,
                             cfg.data.sequence_length)
    n = len(data.splits["train"][0])
    rng = np.random.default_rng(0)
    shape = (n, encoder.decoder_length, mcfg.top_k)
    probs = rng.random(shape).astype("float32")
    soft = {"train": (rng.integers(0, tokenizer.vocabulary_size(), shape).astype("int32"),
                      (probs / probs.sum(-1, keepdims=True)).astype("float16"))}
    out = {}
    for name, (context, method) in variants.items():
        runner = CmlmSeq2SeqRunner(method, context)
        runner.encoder = encoder
        out[name] = runner._dataset(data, "train", soft, shuffle=True)
    return out, tokenizer.vocabulary_size(), n


def shape_of(x):
    return (x["encoder_token_ids"].shape[1], x["decoder_token_ids"].shape[1])


def throughput(variants, data, vocabulary_size, batches, rounds, steps):
    """`{variant: [pairs/s per round]}` in interleaved rounds, and
    `{variant: (shapes, seconds of their first steps)}`."""
    models, taken, compiled = {}, {}, {}
    for name, (context, method) in variants.items():
        keras.utils.set_random_seed(0)
        student = method.build_student(None, context.student_kind(), vocabulary_size)
        model = Distiller(student, None, method.terms(method.config.alpha))
        model.compile(optimizer=keras.optimizers.AdamW(1e-4), jit_compile=True)
        models[name], taken[name] = model, list(data[name].take(batches))
        seen, start = set(), time.perf_counter()
        for x, y in taken[name]:  # compile every shape first
            if shape_of(x) not in seen:
                seen.add(shape_of(x))
                model.train_on_batch(x, y)
        compiled[name] = (len(seen), time.perf_counter() - start)
    return interleaved_rates(models, taken, rounds, steps), compiled


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_interleaved_arguments(parser, batches=24, rounds=4, steps=3)
    args = parser.parse_args()
    variants = contexts()
    data, vocabulary_size, n = datasets(variants)
    print(f"Machine: {platform.machine()} {cpu_model()}, {usable_cpus()} usable CPU "
          f"cores, TF {tf.__version__}, Keras {keras.__version__}; punctuation "
          f"restoration training split ({n} pairs), batch 64.\n\n"
          "| batches | decoder padding | decoder positions fed | vs padded | "
          "batches by target width |\n|---|---|---|---|---|", flush=True)
    fed = {}
    for name, ds in data.items():
        fraction, fed[name], _, widths = padding_stats(ds, "decoder_padding_mask")
        print(f"| {name} | {fraction:.1%} | {fed[name]:,} | "
              f"{fed[name] / fed['padded']:.2f} | "
              + ", ".join(f"{w}: {c}" for w, c in widths.items()) + " |", flush=True)
    rates, compiled = throughput(variants, data, vocabulary_size, args.batches,
                                 args.rounds, args.steps)
    print(f"\nStudent train step (the config's Transformer, 0.5 top-K soft CE + 0.5 "
          f"MLE on stand-in soft labels, XLA): {args.batches} batches per variant, "
          f"{args.rounds} interleaved rounds x {args.steps} steps after compiling "
          "every shape.\n\n| batches | pairs/s (median) | min | max | vs padded "
          "(median of the rounds' ratios) | shapes: first steps |\n|---|---|---|---|---|---|")
    for name, values in rates.items():
        paired = statistics.median(a / b for a, b in zip(values, rates["padded"]))
        shapes, seconds = compiled[name]
        print(f"| {name} | {statistics.median(values):.1f} | {min(values):.1f} | "
              f"{max(values):.1f} | {paired:.2f}x | {shapes}: {seconds:.0f} s |")


if __name__ == "__main__":
    main()
