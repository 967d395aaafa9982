"""Length buckets for `cmlm-seq2seq` students (`Seq2SeqLengthBuckets`),
measured side by side.

    python bench/seq2seq_buckets.py [--batches 24] [--rounds 4] [--steps 3] [--write-docs [PATH]]
    python bench/seq2seq_buckets.py --render-only --write-docs   # from the stored results

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

Each measurement is stored in `bench/results/seq2seq_buckets.json`
(`--results`); the section (`seq2seq-buckets` in docs/performance.md) is
rendered from that file, and written with `--write-docs`.
"""

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import yaml  # noqa: E402

from benchlib import PERFORMANCE_PAGE  # noqa: E402  (bench/ is the script's folder)
from benchlib import ROOT  # noqa: E402
from benchlib import add_interleaved_arguments  # noqa: E402
from benchlib import add_measurement_arguments  # noqa: E402
from benchlib import interleaved_rates  # noqa: E402
from benchlib import machine  # noqa: E402
from benchlib import machine_text  # noqa: E402
from benchlib import now  # noqa: E402
from benchlib import measurement_section  # noqa: E402
from benchlib import padding_stats  # noqa: E402
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


def measure(args):
    """One measurement, as `bench/results/seq2seq_buckets.json` keeps it:
    per variant the decoder padding of one epoch and the train step's
    pairs/s.

    Args:
        args: the parsed options (`batches`, `rounds`, `steps`).
    """
    variants = contexts()
    data, vocabulary_size, n = datasets(variants)
    rates, compiled = throughput(variants, data, vocabulary_size, args.batches,
                                 args.rounds, args.steps)
    context, _ = next(iter(variants.values()))
    record = {"finished": now(), "machine": machine(gpu_hidden=False), "pairs": n,
              "batch_size": context.config.training.batch_size,
              "settings": {k: getattr(args, k) for k in ("batches", "rounds", "steps")},
              "variants": {}}
    for name, ds in data.items():
        fraction, fed, _, widths = padding_stats(ds, "decoder_padding_mask")
        values = rates[name]
        record["variants"][name] = {
            "padding": fraction, "positions_fed": fed, "widths": widths,
            "pairs_per_s": {"median": statistics.median(values), "min": min(values),
                            "max": max(values)},
            "vs_padded": statistics.median(a / b for a, b in zip(values, rates["padded"])),
            "shapes": compiled[name][0], "first_steps_s": compiled[name][1]}
    return record


def render(record):
    """The `seq2seq-buckets` section from a stored measurement (a value it
    did not keep shows as `–`).

    Args:
        record: `bench/results/seq2seq_buckets.json`'s content.
    """
    variants, settings = record["variants"], record["settings"]
    padded = variants["padded"]["positions_fed"]
    lines = [
        f"Measured {record['finished'][:10]} by `python bench/seq2seq_buckets.py "
        f"--batches {settings['batches']} --rounds {settings['rounds']} --steps "
        f"{settings['steps']}` on {machine_text(record['machine'])}; punctuation "
        f"restoration's training split ({record['pairs']:,} pairs), batch "
        f"{record['batch_size']}." + (f" {record['note']}" if record.get("note") else ""),
        "",
        "| batches | decoder padding | decoder positions fed | vs padded | "
        "batches by target width |",
        "|---|---|---|---|---|"]
    for name, v in variants.items():
        widths = ", ".join(f"{w}: {c}" for w, c in (v["widths"] or {}).items()) or "–"
        lines.append(f"| {name} | {v['padding']:.1%} | {v['positions_fed']:,} | "
                     f"{v['positions_fed'] / padded:.2f} | {widths} |")
    lines += [
        "", "Student train step (the config's Transformer, 0.5 top-K soft CE + 0.5 "
        f"MLE on stand-in soft labels, XLA): {settings['batches']} batches per "
        f"variant, {settings['rounds']} interleaved rounds x {settings['steps']} "
        "steps after compiling every shape.", "",
        "| batches | pairs/s (median) | min | max | vs padded (median of the rounds' "
        "ratios) | shapes: first steps |", "|---|---|---|---|---|---|"]
    for name, v in variants.items():
        rate = v["pairs_per_s"]
        lines.append(f"| {name} | {_cell(rate['median'])} | {_cell(rate['min'])} | "
                     f"{_cell(rate['max'])} | {v['vs_padded']:.2f}x | "
                     f"{v['shapes']}: {v['first_steps_s']:.0f} s |")
    return "\n".join(lines) + "\n"


def _cell(value):
    """`17.9`, or `–` for a value the measurement did not keep."""
    return "–" if value is None else f"{value:.1f}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_interleaved_arguments(parser, batches=24, rounds=4, steps=3)
    add_measurement_arguments(parser, "seq2seq_buckets", PERFORMANCE_PAGE)
    args = parser.parse_args(argv)
    measurement_section(args, "seq2seq-buckets", lambda: measure(args), render,
                        title="# Throughput\n")


if __name__ == "__main__":
    main()
