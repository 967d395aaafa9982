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
    python bench/cache_memory.py --render-only --write-docs   # from the stored results

The measurement (each cell's child report: examples, entry bytes on disk,
peak and starting RSS) is kept in `bench/results/cache_memory.json`
(`--results`; `--render-only` rewrites the section from it); `--write-docs`
puts the table between the `<!-- cache-memory:start/end -->` markers of
docs/performance.md (or PATH; text outside them is kept). The exit status
is 1 when the streamed epoch's peak is not flat.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import benchlib
from kdplug import storage

ROOT = benchlib.ROOT
DOC = benchlib.PERFORMANCE_PAGE
DATA = os.path.join(ROOT, "data", "movie_snippets.tsv")
TAPS = ["logits", "hidden/1", "hidden/2"]
SEQ = 64
FACTORS = (1, 4, 16)
MODES = ("precompute", "stream", "load")
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


def measure_cell(mode, base, factor, folder):
    """One cell (`mode` at `factor` x `base`) in a fresh process: its
    `child` report."""
    done = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", mode, "--base", str(base),
         "--factor", str(factor), "--folder", folder],
        capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"{mode} x{factor} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def measure(args):
    """The measurement, a JSON-able dict: the machine, the settings and, per
    transfer-set factor, each mode's child report (`examples`, `bytes` of
    the entry on disk, `peak_mib`, `start_mib`)."""
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for factor in FACTORS:
            row = {"factor": factor}
            for mode in MODES:
                row[mode] = measure_cell(mode, args.base, factor, folder)
                print(f"x{factor} {mode}: {row[mode]}", flush=True)
            rows.append(row)
    return {"machine": benchlib.machine(gpu_hidden=False),
            "settings": {"base": args.base, "factors": list(FACTORS), "taps": TAPS,
                         "sequence_length": SEQ, "shard_size": SHARD_SIZE},
            "finished": benchlib.now(), "rows": rows}


def stream_growth(result):
    """How much the streamed epoch's highest peak (over the factors) exceeds
    its peak at the first factor (0.05: +5%)."""
    peaks = [r["stream"]["peak_mib"] for r in result["rows"]]
    return max(peaks) / peaks[0] - 1


def render(result):
    """The `cache-memory` section of docs/performance.md from a measurement."""
    m, s, rows = result["machine"], result["settings"], result["rows"]
    growth = stream_growth(result)
    lines = [
        f"### Teacher-output cache memory ({result['finished'][:10]}: "
        f"{m['cpu']}, {m['cpus']} cores)",
        "",
        f"Measured by `python bench/cache_memory.py --base {s['base']} --write-docs`: "
        f"taps {', '.join(s['taps'])} (float16 on disk, shards of {s['shard_size']}, "
        f"each a random sample of the set), sequence length {s['sequence_length']}, "
        "a 384-wide teacher; peak RSS of a fresh process per cell.",
        "",
        "| transfer set | examples | entry on disk | precompute peak | streamed epoch peak "
        "| `load()` peak |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['factor']}x | {r['stream']['examples']:,} | "
            f"{r['stream']['bytes'] / 2**20:,.0f} MiB | "
            f"{r['precompute']['peak_mib']:,.0f} MiB | {r['stream']['peak_mib']:,.0f} MiB | "
            f"{r['load']['peak_mib']:,.0f} MiB |")
    verdict = "flat" if growth <= FLAT else "NOT flat"
    lines += ["", f"Streamed epoch peak from 1x to {rows[-1]['factor']}x: "
                  f"{growth:+.1%} ({verdict}; the target is within {FLAT:.0%})."]
    return "\n".join(lines) + "\n"


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", type=int, default=1000)
    benchlib.add_measurement_arguments(parser, "cache_memory", DOC)
    parser.add_argument("--child", choices=MODES)
    parser.add_argument("--factor", type=int, default=1)
    parser.add_argument("--folder")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.child:
        child(args)
        return 0
    benchlib.measurement_section(args, "cache-memory", lambda: measure(args), render)
    return 0 if stream_growth(storage.read_json(args.results)) <= FLAT else 1


if __name__ == "__main__":
    sys.exit(main())
