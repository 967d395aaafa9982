"""Peak memory of the teacher-output cache as the transfer set grows.

A transfer set of 1x, 4x and 16x a base corpus (real movie_snippets training
sentences, grown by the `mask` augmenter, as `augment:` does) gets its
teacher's hidden states cached (`logits`, `hidden/1`, `hidden/2`; float16).
Each measurement runs in a fresh process and reports its peak resident set
size (`ru_maxrss`):

- `precompute`: the teacher over the whole transfer set, shard by shard;
- `stream`: one epoch of `TeacherCache.stream()` (what `kdplug run` trains
  on), shuffled;
- `load`: `TeacherCache.load()`, the whole split as float32 in memory (the
  pre-streaming path, for contrast).

The teacher is a random-weights BERT with MiniLM-L6's widths (hidden 384,
12 heads, intermediate 1536) and 2 layers, at sequence length 64: each
hidden-state tap is the size MiniLM's would be, and the precompute takes
seconds instead of minutes. Weights do not change memory behaviour.

    python bench/cache_memory.py                 # base 1000 sentences
    python bench/cache_memory.py --base 500 --write-docs
"""

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import benchlib

ROOT = benchlib.ROOT
DOC = benchlib.PERFORMANCE_PAGE
DATA = os.path.join(ROOT, "data", "movie_snippets.tsv")
TAPS = ["logits", "hidden/1", "hidden/2"]
SEQ = 64
FACTORS = (1, 4, 16)
SHARD_SIZE = 128
FLAT = 0.10  # the streamed epoch's peak may grow at most 10% from 1x to 16x


def setup(base, factor):
    """`(teacher, encoder, examples)` for `factor` x `base` sentences."""
    import keras
    import keras_hub

    from kdplug.config.sections import DataConfig
    from kdplug.data import TextEncoder
    from kdplug.data.readers import read_splits
    from kdplug.data.transfer_set import AugmentStep
    from kdplug.data.transfer_set import build_transfer_set
    from kdplug.models import BertClassifier
    from kdplug_plugins.augmenters.mask import MaskAugmenter

    splits = read_splits(DataConfig(path=DATA, num_classes=2, sequence_length=SEQ),
                         os.path.abspath, seed=0)
    examples = splits["train"].sample(base, seed=0)
    if factor > 1:
        step = AugmentStep(MaskAugmenter(MaskAugmenter.Config(p_mask=0.2)), n=factor - 1)
        examples = build_transfer_set(examples, [step], seed=0)
    vocabulary = sorted({w for t in examples.texts for w in t.lower().split()})
    tokenizer = keras_hub.tokenizers.BertTokenizer(
        vocabulary=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + vocabulary[:20000],
        lowercase=True)
    keras.utils.set_random_seed(0)
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=tokenizer.vocabulary_size(), num_layers=2, num_heads=12,
        hidden_dim=384, intermediate_dim=1536, max_sequence_length=SEQ)
    teacher = BertClassifier(backbone, num_classes=2, dropout=0.0)
    return teacher, TextEncoder(tokenizer, SEQ), examples


def child(args):
    """One measurement in this (fresh) process; prints a JSON line."""
    import resource

    from kdplug.teacher.output_cache import TeacherCache

    teacher, encoder, examples = setup(args.base, args.factor)
    cache = TeacherCache(teacher, encoder, examples, TAPS, shard_size=SHARD_SIZE,
                         root=args.folder)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if args.child == "precompute":
        cache.precompute()
    elif args.child == "stream":
        rows = sum(int(y.shape[0]) for _, y in cache.stream(32, shuffle=True, seed=0))
        assert rows == len(examples), (rows, len(examples))
    else:
        loaded = cache.load()
        assert len(next(iter(loaded.values()))) == len(examples)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"examples": len(examples), "peak_mib": peak / 1024,
                      "start_mib": before / 1024, "bytes": cache.disk_size()}))


def measure(mode, base, factor, folder):
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", mode, "--base", str(base),
         "--factor", str(factor), "--folder", folder],
        capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{mode} x{factor} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def render(rows, base):
    one = rows[0]["stream"]["peak_mib"]
    worst = max(r["stream"]["peak_mib"] for r in rows)
    growth = worst / one - 1
    lines = [
        f"### Teacher-output cache memory ({datetime.date.today().isoformat()}: "
        f"{benchlib.cpu_model()}, {benchlib.usable_cpus()} cores)",
        "",
        f"Measured by `python bench/cache_memory.py --base {base} --write-docs`: taps "
        f"{', '.join(TAPS)} (float16 on disk, shards of {SHARD_SIZE}, each a random "
        f"sample of the set), sequence length {SEQ}, a 384-wide teacher; peak RSS "
        "of a fresh process per cell.",
        "",
        "| transfer set | examples | entry on disk | precompute peak | streamed epoch peak "
        "| `load()` peak |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['factor']}x | {r['examples']:,} | {r['bytes'] / 2**20:,.0f} MiB | "
            f"{r['precompute']['peak_mib']:,.0f} MiB | {r['stream']['peak_mib']:,.0f} MiB | "
            f"{r['load']['peak_mib']:,.0f} MiB |")
    verdict = "flat" if growth <= FLAT else "NOT flat"
    lines += ["", f"Streamed epoch peak from 1x to {rows[-1]['factor']}x: "
                  f"{growth:+.1%} ({verdict}; the target is within {FLAT:.0%})."]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=1000)
    benchlib.add_write_docs_argument(parser, DOC)
    parser.add_argument("--child", choices=["precompute", "stream", "load"])
    parser.add_argument("--factor", type=int, default=1)
    parser.add_argument("--folder")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        child(args)
        return 0
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for factor in FACTORS:
            row = {"factor": factor}
            for mode in ("precompute", "stream", "load"):
                row[mode] = measure(mode, args.base, factor, folder)
                print(f"x{factor} {mode}: {row[mode]}", flush=True)
            row["examples"] = row["stream"]["examples"]
            row["bytes"] = row["stream"]["bytes"]
            rows.append(row)
    section = render(rows, args.base)
    print(section)
    if args.write_docs:
        benchlib.write_marked_section(args.write_docs, "cache-memory", section)
    growth = max(r["stream"]["peak_mib"] for r in rows) / rows[0]["stream"]["peak_mib"] - 1
    return 0 if growth <= FLAT else 1


if __name__ == "__main__":
    sys.exit(main())
