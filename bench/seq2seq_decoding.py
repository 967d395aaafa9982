"""Decoding speed of the `cmlm-seq2seq` Transformer student: the key/value
cache against decoding the whole prefix at every step, and kdplug's beam
sampler against keras-hub's (issue #19).

Builds the student of `configs/cmlm_seq2seq.yaml` (its sizes, the bundled
teacher's 30,522 word pieces, 60 source and 64 target positions) with
random weights, and decodes the same batches of random sources greedily and
with the config's beam search, with the cache (`Seq2SeqDecoder`'s default)
and without (`use_cache=False`), and the cached beam search once more with
keras-hub's `BeamSampler` in place of kdplug's `RowBeamSampler`,
alternating them within every round so that machine noise hits all alike.
A random model almost never emits
[SEP] (1 in 30,522 per step), so every row runs the full 64 steps: the
worst case, the one a long target costs. Prints median milliseconds per
sentence and the ratios, and checks that each pair gives the same tokens.

    python bench/seq2seq_decoding.py                 # 3 rounds
    python bench/seq2seq_decoding.py --rounds 5 --write-docs
    python bench/seq2seq_decoding.py --smoke         # a tiny model, seconds
    python bench/seq2seq_decoding.py --render-only --write-docs   # from the stored results

The measurement (every round's milliseconds per sentence for each decoder)
is kept in `bench/results/seq2seq_decoding.json` (`--results`; a `--smoke`
run's in runs/seq2seq_decoding-smoke/seq2seq_decoding.json unless
`--results` says otherwise; `--render-only` rewrites the section from it);
`--write-docs` puts the table between the
`<!-- seq2seq-decoding:start/end -->` markers of docs/performance.md (or
PATH; text outside them is kept).
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

import benchlib  # bench/ is the script's folder

DOC = benchlib.PERFORMANCE_PAGE
VOCABULARY = 30522  # the bundled MiniLM teacher's word pieces
CLS, SEP, PAD = 101, 102, 0
# The decoders timed, by their name in the results: (strategy, key/value
# cache, keras-hub's BeamSampler in place of kdplug's RowBeamSampler).
DECODERS = {
    "greedy, cache": ("greedy", True, False),
    "greedy, whole prefix": ("greedy", False, False),
    "beam, cache": ("beam", True, False),
    "beam, whole prefix": ("beam", False, False),
    "beam, cache, keras-hub BeamSampler": ("beam", True, True),
}
SMOKE_RESULTS = os.path.join(benchlib.ROOT, "runs", "seq2seq_decoding-smoke",
                             "seq2seq_decoding.json")


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=1, help="batches per round")
    parser.add_argument("--smoke", action="store_true",
                        help="a tiny model; its results go to "
                        f"{os.path.relpath(SMOKE_RESULTS, benchlib.ROOT)} by default")
    benchlib.add_measurement_arguments(parser, "seq2seq_decoding", DOC)
    args = parser.parse_args(argv)
    if args.smoke and args.results == parser.get_default("results"):
        args.results = SMOKE_RESULTS  # never over the real measurement
    return args


def build_student(smoke):
    """The config's student with random weights (a tiny one with `smoke`)."""
    from kdplug_plugins.cmlm_seq2seq.seq2seq_transformer import Seq2SeqTransformer

    doc = benchlib.load_base("cmlm_seq2seq")
    method, student = doc["method"], dict(doc["student"])
    student.pop("kind")
    if smoke:
        student.update(hidden_dim=16, num_encoder_layers=1, num_decoder_layers=1,
                       num_heads=2, intermediate_dim=32)
        return Seq2SeqTransformer(200, 8, 10, **student), method
    return Seq2SeqTransformer(VOCABULARY, method["max_source_length"],
                              method["max_target_length"], **student), method


def sources(model, n, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000 % model.vocabulary_size, model.vocabulary_size,
                       (n, model.max_source_length)).astype("int32")
    return {"encoder_token_ids": ids, "encoder_padding_mask": np.ones_like(ids)}


def measure(args):
    """The measurement, a JSON-able dict: the machine, the settings, the
    model's size and, per decoder (`DECODERS`), its milliseconds per
    sentence in each round."""
    import keras_hub

    from kdplug_plugins.cmlm_seq2seq.seq2seq_decoder import Seq2SeqDecoder

    model, method = build_student(args.smoke)
    n = args.batch_size * args.batches
    ids = CLS % model.vocabulary_size, SEP % model.vocabulary_size, PAD
    width = method["beam_width"]
    decoders = {}
    for name, (strategy, cached, keras_hub_sampler) in DECODERS.items():
        # keras-hub's sampler runs the beam search with the same cache
        sampler = None
        if keras_hub_sampler:
            sampler = keras_hub.samplers.BeamSampler(num_beams=width)
        decoders[name] = Seq2SeqDecoder(model, *ids, strategy, width, use_cache=cached,
                                        sampler=sampler)
    warm = sources(model, args.batch_size, seed=99)
    outputs = {}
    for name, decoder in decoders.items():  # trace once, outside the timing
        outputs[name] = decoder.generate_ids(warm, args.batch_size)
    for strategy in ("greedy", "beam"):
        if not np.array_equal(outputs[f"{strategy}, cache"],
                              outputs[f"{strategy}, whole prefix"]):
            raise SystemExit(f"{strategy}: cached and full decoding differ")
    if not np.array_equal(outputs["beam, cache"],
                          outputs["beam, cache, keras-hub BeamSampler"]):
        raise SystemExit("beam: RowBeamSampler and keras-hub's BeamSampler differ")
    times = {name: [] for name in decoders}
    for round_ in range(args.rounds):
        batch = sources(model, n, seed=round_)
        for name, decoder in decoders.items():  # alternating within the round
            start = time.perf_counter()
            decoder.generate_ids(batch, args.batch_size)
            times[name].append((time.perf_counter() - start) / n * 1000)
    return {"machine": benchlib.machine(gpu_hidden=False),
            "settings": {"rounds": args.rounds, "batch_size": args.batch_size,
                         "batches": args.batches, "smoke": bool(args.smoke),
                         "beam_width": width},
            "model": {"params": int(model.count_params()),
                      "steps": int(model.decoder_length) - 1},
            "finished": benchlib.now(), "ms_per_sentence": times}


def render(result):
    """The `seq2seq-decoding` section of docs/performance.md from a
    measurement: medians and ratios."""
    s, times = result["settings"], result["ms_per_sentence"]

    def median(name):
        return statistics.median(times[name])

    lines = [
        f"Student of `configs/cmlm_seq2seq.yaml` ({result['model']['params'] / 1e6:.1f}M "
        f"parameters, random weights), {s['batch_size']} sources per batch, every "
        f"row decoding all {result['model']['steps']} steps; median of {s['rounds']} "
        f"rounds, ms per sentence. {benchlib.machine_text(result['machine'])}",
        "",
        "| decoding | whole prefix every step | key/value cache | speed-up |",
        "|---|---|---|---|",
    ]
    for strategy, label in (("greedy", "greedy"),
                            ("beam", f"beam, width {s['beam_width']}")):
        full = median(f"{strategy}, whole prefix")
        cached = median(f"{strategy}, cache")
        lines.append(f"| {label} | {full:.1f} | {cached:.1f} | {full / cached:.2f}x |")
    theirs = median("beam, cache, keras-hub BeamSampler")
    ours = median("beam, cache")
    lines += [
        "",
        "Beam search with the cache, the beams reordered by keras-hub's "
        "`BeamSampler` (`take_along_axis` on a `(batch, beams, ...)` view) "
        "against kdplug's `RowBeamSampler` (a gather of rows):",
        "",
        "| sampler | ms per sentence | speed-up |",
        "|---|---|---|",
        f"| keras-hub `BeamSampler` | {theirs:.1f} | 1.00x |",
        f"| kdplug `RowBeamSampler` | {ours:.1f} | {theirs / ours:.2f}x |",
        "",
        "Each pair gives the same tokens (checked on every run, and by "
        "tests/plugins/cmlm_seq2seq/test_cmlm_decoding.py and "
        "test_row_beam_sampler.py).",
    ]
    return "\n".join(lines) + "\n"


def main(argv=None):
    args = parse_args(argv)
    benchlib.measurement_section(args, "seq2seq-decoding", lambda: measure(args), render,
                                 title="# Throughput\n")
    if args.write_docs:
        print(f"wrote {args.write_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
