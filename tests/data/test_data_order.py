"""Every producer of training batches gives random samples of the split,
whatever order the examples came in (issue #47).

The split here is sorted by label, as the bundled movie_snippets' training
split is: 512 examples of class 0, then 512 of class 1, sentence lengths
independent of the label. Random batches of 32 from it, over an epoch of 32
batches, satisfy (the bounds each check states):

- **dominated batches**: a batch holds >= 90% of one class (29 of 32) with
  probability 2 * P(Binomial(32, 1/2) >= 29) = 2.6e-6, so an epoch shows
  at most one such batch (P(two or more) < 1e-8);
- **quarter shares**: a quarter of the epoch (256 examples drawn without
  replacement from 1,024) holds class 1 with share 0.5 and standard
  deviation sqrt(0.25 / 256 * 768 / 1023) = 0.027; every quarter is within
  five of those of one half, [0.365, 0.635];
- **dispersion**: `BatchMix`'s ratio stays under its own warning threshold.

Before kdplug 0.3, `TeacherCache.stream()` read each 2,048-example shard as
one element, in file order: these checks failed on it (one-class runs of
batches, quarters at 0.0 and 1.0).
"""

import keras_hub
import numpy as np
import pytest
import tensorflow as tf
from conftest import fast_first

from kdplug import testing
from kdplug.data import Examples
from kdplug.data import TextEncoder
from kdplug.data.batch_mix import BatchMix
from kdplug.data.batch_mix import dominated_probability
from kdplug.data.length_buckets import LengthBuckets
from kdplug.data.transfer_set import AugmentStep
from kdplug.data.transfer_set import build_transfer_set
from kdplug.data.word_encoder import WordEncoder
from kdplug.data.word_encoder import word_dataset
from kdplug.teacher.output_cache import TeacherCache
from kdplug.training.custom_loop import CustomLoopTrainer
from kdplug_plugins.augmenters.mask import MaskAugmenter
from kdplug_plugins.mtdnn.sampling import mixture_dataset

N = 1024
BATCH = 32
SEQ = 12
QUARTER_SD = np.sqrt(0.25 / (N / 4) * (N - N / 4) / (N - 1))
QUARTER_BOUND = 5 * QUARTER_SD  # 0.135
MAX_DOMINATED = 1


def label_sorted_examples(n=N, seed=0):
    """`n` toy sentences, the first half labelled 0, the second half 1;
    lengths drawn independently of the label."""
    texts, _ = testing.toy_sentences(n, seed=seed)
    labels = (np.arange(n) >= n // 2).astype("int32")
    return Examples(texts, labels, source="label-sorted toy")


def toy_encoder(special_tokens_in_strings=False):
    """The toy vocabulary's `TextEncoder` (`special_tokens_in_strings`:
    "[MASK]" in augmented text is the mask token)."""
    return TextEncoder(keras_hub.tokenizers.BertTokenizer(
        vocabulary=testing.toy_vocabulary(), lowercase=True,
        special_tokens_in_strings=special_tokens_in_strings), SEQ)


@pytest.fixture(scope="module")
def examples():
    return label_sorted_examples()


encoder = pytest.fixture(scope="module")(toy_encoder)


def epoch_labels(dataset, label=lambda x, y: y):
    """The labels of every batch of one pass over `dataset`, in order."""
    return [np.asarray(label(x, y)).reshape(-1) for x, y in dataset]


def check_random_batches(batches, share=0.5, bound=QUARTER_BOUND, total=N):
    """Asserts the module docstring's bounds on one epoch of label batches
    (class 1's share of the split is `share`, `total` examples)."""
    assert sum(len(b) for b in batches) == total
    full = [b for b in batches if len(b) == BATCH]
    dominated = sum(max(np.mean(b == 0), np.mean(b == 1)) >= 0.9 for b in full)
    # the binomial expectation for random batches, plus five Poisson sds
    expected = len(full) * dominated_probability(BATCH, [1 - share, share])
    allowed = max(MAX_DOMINATED, int(expected + 5 * np.sqrt(expected)))
    assert dominated <= allowed, (
        f"{dominated} batches are >= 90% one class ({expected:.2f} expected)")
    flat = np.concatenate(batches)
    quarters = [np.mean(q == 1) for q in np.array_split(flat, 4)]
    assert all(abs(q - share) <= bound for q in quarters), (
        f"quarter-epoch shares of class 1: {np.round(quarters, 3)}, the split's "
        f"{share} +- {bound:.3f}")
    mix = BatchMix("classes")
    for b in batches:
        mix.add(b)
    assert not mix.far_from_random(), mix.describe()
    return mix


def check_two_epochs(dataset, **kwargs):
    first, second = epoch_labels(dataset, **kwargs), epoch_labels(dataset, **kwargs)
    check_random_batches(first)
    check_random_batches(second)


def test_a_label_sorted_split_fails_the_checks(examples):
    """The checks have teeth: the file's own order fails every one."""
    batches = [examples.labels[i:i + BATCH] for i in range(0, N, BATCH)]
    with pytest.raises(AssertionError, match="one class"):
        check_random_batches(batches)
    mix = BatchMix("classes")
    for b in batches:
        mix.add(b)
    assert mix.far_from_random() and mix.summary()["ratio"] > 20


@pytest.mark.parametrize("buckets", [None, LengthBuckets(window=4, multiple=4)],
                         ids=["padded", "length-buckets"])
def test_text_encoder_dataset(examples, encoder, buckets):
    check_two_epochs(encoder.dataset(examples, BATCH, shuffle=True, seed=0,
                                     length_buckets=buckets))


def test_word_dataset(examples, encoder):
    words = WordEncoder.from_examples(examples, SEQ)
    check_two_epochs(word_dataset(encoder, words, examples, BATCH, shuffle=True,
                                  seed=1))


@pytest.fixture(scope="module")
def cache(examples, encoder, tmp_path_factory):
    teacher = testing.tiny_bert_classifier(
        num_layers=1, vocabulary_size=len(testing.toy_vocabulary()))
    cache = TeacherCache(teacher, encoder, examples, ["logits"], shard_size=128,
                         run_eagerly=True, root=str(tmp_path_factory.mktemp("outputs")))
    cache.precompute()
    return cache


@pytest.mark.parametrize("buckets", [None, LengthBuckets(window=4, multiple=4)],
                         ids=["padded", "length-buckets"])
@pytest.mark.parametrize("seed", fast_first([0, 1, 2]))
def test_teacher_output_stream(cache, buckets, seed):
    check_two_epochs(cache.stream(BATCH, shuffle=True, seed=seed,
                                  length_buckets=buckets))


def test_each_stored_shard_is_a_random_sample(cache, examples):
    for index in range(cache.num_shards):
        share = np.mean(examples.labels[cache.shard_indices(index)])
        # 128 of 1,024 without replacement: sd 0.041, five of them
        assert abs(share - 0.5) <= 5 * np.sqrt(0.25 / 128 * 896 / 1023), index


@pytest.mark.slow
def test_transfer_set_streamed_mixes_originals_and_each_augmenter(tmp_path):
    # 256 originals, then each augmenter's copies appended in a block of its
    # own: batches must mix originals with copies, and one augmenter's
    # copies with the rest.
    originals = label_sorted_examples(256, seed=3)
    steps = [AugmentStep(MaskAugmenter(MaskAugmenter.Config(p_mask=0.3)), n=1),
             AugmentStep(MaskAugmenter(MaskAugmenter.Config(p_mask=0.6)), n=2)]
    transfer = build_transfer_set(originals, steps, seed=0)
    first = len(build_transfer_set(originals, steps[:1], seed=0))
    n = len(transfer)
    assert np.all(np.asarray(transfer.labels)[256:] == -1)
    source = np.zeros(n, "int32")  # 0 original, 1 first augmenter, 2 second
    source[256:first], source[first:] = 1, 2
    teacher = testing.tiny_bert_classifier(
        num_layers=1, vocabulary_size=len(testing.toy_vocabulary()))
    cache = TeacherCache(teacher, toy_encoder(special_tokens_in_strings=True),
                         Examples(transfer.texts, source, source="transfer set"),
                         ["logits"], shard_size=64, run_eagerly=True, root=str(tmp_path))
    cache.precompute()
    batches = epoch_labels(cache.stream(BATCH, shuffle=True, seed=0))
    for block, tag in (("augmented", lambda y: (y > 0).astype("int32")),
                       ("second augmenter", lambda y: (y == 2).astype("int32"))):
        tagged = [tag(b) for b in batches]
        share = np.mean(np.concatenate(tagged))
        sd = np.sqrt(share * (1 - share) / (n / 4) * (n - n / 4) / (n - 1))
        check_random_batches(tagged, share=share, bound=5 * sd, total=n)


def test_multi_task_mixture_keeps_each_task_shuffled(examples, encoder):
    # Two tasks, both sorted by label; every batch is one task's, and each
    # task's batches are random samples of its split.
    datasets = [encoder.dataset(examples, BATCH, shuffle=True, seed=s,
                                extra={"task": np.full(N, s, "int32")})
                for s in (0, 1)]
    mixed = mixture_dataset(datasets, [N, N], BATCH, "proportional", seed=0)
    per_task = {0: [], 1: []}
    for x, y in mixed:
        [task] = set(x["task"].numpy().tolist())
        per_task[task].append(y.numpy())
    for task, batches in per_task.items():
        check_random_batches(batches)
    # the tasks alternate at random: each half of the epoch holds about
    # half of each task's batches (32 of 64 per half, hypergeometric sd 2.0)
    order = [int(x["task"][0]) for x, _ in mixed]
    assert abs(sum(order[:32]) - 16) <= 10


def test_custom_loop_replicas_get_random_shares(examples, encoder, cpu_devices):
    strategy = tf.distribute.MirroredStrategy(cpu_devices)
    trainer = CustomLoopTrainer.__new__(CustomLoopTrainer)
    trainer.strategy = strategy
    dataset = trainer._distribute(encoder.dataset(examples, BATCH, shuffle=True, seed=0))
    replicas = [[], []]
    for _, y in dataset:
        for r, part in enumerate(strategy.experimental_local_results(y)):
            replicas[r].append(part.numpy())
    for batches in replicas:
        assert {len(b) for b in batches} == {BATCH // 2}
        mix = BatchMix("classes")
        for b in batches:
            mix.add(b)
        assert not mix.far_from_random(), mix.describe()
        flat = np.concatenate(batches)
        # half the split per replica: 512 of 1,024, sd 0.016
        assert abs(np.mean(flat) - 0.5) <= 5 * np.sqrt(0.25 / 512 * 512 / 1023)


def test_seq2seq_student_batches_with_their_top_k_soft_labels():
    # The C-MLM student's training batches (sources, targets and the cached
    # top-K soft labels, held in memory): the rows' position in the split is
    # written into the soft labels, so blocks of the file would show.
    import types

    from kdplug_plugins.cmlm_seq2seq.cmlm_seq2seq_runner import CmlmSeq2SeqRunner

    half = (np.arange(N) >= N // 2).astype("int32")
    ids = np.zeros((N, 4, 2), "int32")
    ids[:, 0, 0] = half
    runner = CmlmSeq2SeqRunner.__new__(CmlmSeq2SeqRunner)
    runner._arrays = {}  # the encoded splits (`__init__` sets it)
    runner.encoder = types.SimpleNamespace(student_arrays=lambda sources, targets: (
        {"source_ids": np.zeros((N, 4), "int32")}, np.zeros((N, 4), "int32")))
    runner.context = types.SimpleNamespace(
        config=types.SimpleNamespace(seed=0, training=types.SimpleNamespace(batch_size=BATCH)),
        length_buckets=lambda kind: None)
    data = types.SimpleNamespace(splits={"train": ([""] * N, [""] * N)})
    ds = runner._dataset(data, "train", {"train": (ids, np.ones((N, 4, 2), "float16"))},
                         shuffle=True)
    check_two_epochs(ds, label=lambda x, y: x["teacher/topk_ids"][:, 0, 0])
