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
sentence and the ratios, and checks that each pair gives the same tokens;
`--write-docs` puts the table in docs/performance.md between the
`seq2seq-decoding` markers.

    python bench/seq2seq_decoding.py                 # 3 rounds
    python bench/seq2seq_decoding.py --rounds 5 --write-docs
    python bench/seq2seq_decoding.py --smoke         # a tiny model, seconds
"""

import argparse
import statistics
import sys
import time

import numpy as np

import benchlib  # bench/ is the script's folder

DOC = benchlib.PERFORMANCE_PAGE
VOCABULARY = 30522  # the bundled MiniLM teacher's word pieces
CLS, SEP, PAD = 101, 102, 0
KERAS_HUB_BEAM = ("beam, keras-hub's BeamSampler", True)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--batches", type=int, default=1, help="batches per round")
    parser.add_argument("--smoke", action="store_true")
    benchlib.add_write_docs_argument(parser, DOC)
    return parser.parse_args(argv)


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
    import keras_hub

    from kdplug_plugins.cmlm_seq2seq.seq2seq_decoder import Seq2SeqDecoder

    model, method = build_student(args.smoke)
    n = args.batch_size * args.batches
    decoders = {}
    ids = CLS % model.vocabulary_size, SEP % model.vocabulary_size, PAD
    width = method["beam_width"]
    for strategy in ("greedy", "beam"):
        for cached in (True, False):
            decoders[(strategy, cached)] = Seq2SeqDecoder(
                model, *ids, strategy, width, use_cache=cached)
    # the beam search as keras-hub's sampler runs it, with the same cache
    decoders[KERAS_HUB_BEAM] = Seq2SeqDecoder(
        model, *ids, "beam", width,
        sampler=keras_hub.samplers.BeamSampler(num_beams=width))
    warm = sources(model, args.batch_size, seed=99)
    outputs = {}
    for key, decoder in decoders.items():  # trace once, outside the timing
        outputs[key] = decoder.generate_ids(warm, args.batch_size)
    for strategy in ("greedy", "beam"):
        if not np.array_equal(outputs[(strategy, True)], outputs[(strategy, False)]):
            raise SystemExit(f"{strategy}: cached and full decoding differ")
    if not np.array_equal(outputs[("beam", True)], outputs[KERAS_HUB_BEAM]):
        raise SystemExit("beam: RowBeamSampler and keras-hub's BeamSampler differ")
    times = {key: [] for key in decoders}
    for round_ in range(args.rounds):
        batch = sources(model, n, seed=round_)
        for key, decoder in decoders.items():  # alternating within the round
            start = time.perf_counter()
            decoder.generate_ids(batch, args.batch_size)
            times[key].append((time.perf_counter() - start) / n * 1000)
    return model, method, times


def table(model, method, times, args):
    lines = [
        f"Student of `configs/cmlm_seq2seq.yaml` ({model.count_params() / 1e6:.1f}M "
        f"parameters, random weights), {args.batch_size} sources per batch, every "
        f"row decoding all {model.decoder_length - 1} steps; median of {args.rounds} "
        f"rounds, ms per sentence. {benchlib.machine_text(benchlib.machine(gpu_hidden=False))}",
        "",
        "| decoding | whole prefix every step | key/value cache | speed-up |",
        "|---|---|---|---|",
    ]
    for strategy, label in (("greedy", "greedy"),
                            ("beam", f"beam, width {method['beam_width']}")):
        full = statistics.median(times[(strategy, False)])
        cached = statistics.median(times[(strategy, True)])
        lines.append(f"| {label} | {full:.1f} | {cached:.1f} | {full / cached:.2f}x |")
    theirs = statistics.median(times[KERAS_HUB_BEAM])
    ours = statistics.median(times[("beam", True)])
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
    model, method, times = measure(args)
    text = table(model, method, times, args)
    print(text)
    if args.write_docs:
        benchlib.write_marked_section(args.write_docs, "seq2seq-decoding", text,
                                      title="# Throughput\n")
        print(f"wrote {args.write_docs}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
