"""Side-by-side timing: the padding a student is fed, and variants timed
in interleaved rounds so that machine noise hits them alike
(`length_buckets.py`, `seq2seq_buckets.py`)."""

import time


def padding_stats(dataset, mask_key):
    """`(padding fraction, positions fed, real positions, {width: batches})`
    of one epoch of `(features, labels)` batches, counted on the padding
    mask `features[mask_key]`."""
    real = fed = 0
    widths = {}
    for x, _ in dataset:
        mask = x[mask_key].numpy()
        real, fed = real + int(mask.sum()), fed + mask.size
        widths[mask.shape[1]] = widths.get(mask.shape[1], 0) + 1
    return 1 - real / fed, fed, real, dict(sorted(widths.items()))


def add_interleaved_arguments(parser, batches, rounds, steps):
    """`--batches`, `--rounds` and `--steps` of a script timed with
    `interleaved_rates`, with the script's defaults."""
    parser.add_argument("--batches", type=int, default=batches,
                        help="batches of each variant timed (from one shuffled epoch)")
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--steps", type=int, default=steps,
                        help="steps per variant per round")


def interleaved_rates(models, batches, rounds, steps):
    """`{variant: [examples/s per round]}`: `steps` `train_on_batch` calls
    of each variant's model on its own batches per round, the variants'
    order alternating between rounds, so machine noise hits them alike.

    Args:
        models: `{variant: compiled keras.Model}` (shapes compiled already).
        batches: `{variant: [(x, y)]}`, cycled through.
        rounds, steps: ints.
    """
    rates = {name: [] for name in models}
    names = list(models)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            stream = batches[name]
            chosen = [stream[(r * steps + i) % len(stream)] for i in range(steps)]
            begin = time.perf_counter()
            for x, y in chosen:
                models[name].train_on_batch(x, y)
            rates[name].append(sum(len(y) for _, y in chosen)
                               / (time.perf_counter() - begin))
    return rates


