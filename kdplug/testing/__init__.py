"""Helpers for kdplug's tests and for plugin authors' tests.

Everything here is tiny and built in memory: no download, a few seconds on CPU.

Examples:

```python
from kdplug import testing

teacher = testing.tiny_bert_classifier(num_layers=4, seed=0)
x, y = testing.toy_batch(batch_size=8)
ds = testing.toy_dataset(num_examples=64, batch_size=16)
losses = testing.run_term_test(term, teacher_taps, student_taps, batch)  # a Term's contract
```
"""

import atexit
import os
import shutil
import tempfile

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from kdplug.models import BertClassifier
from kdplug.testing.serialization_checks import run_serialization_test  # noqa: F401
from kdplug.testing.term_checks import run_term_test  # noqa: F401

VOCAB_SIZE = 64
SEQUENCE_LENGTH = 12


def tiny_backbone(num_layers=2, hidden_dim=16, num_heads=2, intermediate_dim=32,
                  vocabulary_size=VOCAB_SIZE, max_sequence_length=32, seed=0):
    keras.utils.set_random_seed(seed)
    return keras_hub.models.BertBackbone(
        vocabulary_size=vocabulary_size,
        num_layers=num_layers,
        num_heads=num_heads,
        hidden_dim=hidden_dim,
        intermediate_dim=intermediate_dim,
        max_sequence_length=max_sequence_length,
        dropout=0.0,
    )


def tiny_bert_classifier(num_classes=2, seed=0, **backbone_kwargs):
    backbone = tiny_backbone(seed=seed, **backbone_kwargs)
    return BertClassifier(backbone, num_classes=num_classes, dropout=0.0)


def toy_arrays(num_examples=64, sequence_length=SEQUENCE_LENGTH, num_classes=2,
               vocabulary_size=VOCAB_SIZE, seed=0):
    """A learnable toy task: the label is which half of the vocabulary is
    more frequent in the (variable-length, padded) sequence."""
    rng = np.random.default_rng(seed)
    lengths = rng.integers(4, sequence_length + 1, size=num_examples)
    token_ids = rng.integers(4, vocabulary_size, size=(num_examples, sequence_length))
    padding_mask = np.arange(sequence_length)[None, :] < lengths[:, None]
    token_ids = np.where(padding_mask, token_ids, 0).astype("int32")
    token_ids[:, 0] = 2  # [CLS]
    high = ((token_ids >= vocabulary_size // 2) & padding_mask).sum(1)
    low = ((token_ids < vocabulary_size // 2) & (token_ids >= 4) & padding_mask).sum(1)
    labels = (high > low).astype("int32") % num_classes
    x = {
        "token_ids": token_ids,
        "segment_ids": np.zeros_like(token_ids),
        "padding_mask": padding_mask.astype("int32"),
    }
    return x, labels


def toy_batch(batch_size=8, **kwargs):
    return toy_arrays(num_examples=batch_size, **kwargs)


def toy_dataset(num_examples=64, batch_size=16, seed=0, **kwargs):
    x, y = toy_arrays(num_examples=num_examples, seed=seed, **kwargs)
    return tf.data.Dataset.from_tensor_slices((x, y)).batch(batch_size)


POSITIVE = ["good", "great", "fine", "nice", "superb", "fun"]
NEGATIVE = ["bad", "awful", "poor", "dull", "weak", "boring"]
NEUTRAL = ["the", "movie", "film", "plot", "acting", "was", "is", "a", "and", "very"]
SPECIAL = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def toy_vocabulary():
    return SPECIAL + POSITIVE + NEGATIVE + NEUTRAL


def toy_sentences(num_examples=200, seed=0):
    """Short sentences whose label (1 = positive) is the majority of
    sentiment words; returns `(texts, labels)`."""
    rng = np.random.default_rng(seed)
    texts, labels = [], []
    while len(texts) < num_examples:
        pos, neg = rng.integers(0, 4, size=2)
        if pos == neg:
            continue
        words = list(rng.choice(POSITIVE, pos)) + list(rng.choice(NEGATIVE, neg))
        words += list(rng.choice(NEUTRAL, rng.integers(2, 6)))
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append(int(pos > neg))
    return texts, labels


def write_toy_tsv(path, num_examples=240, seed=0):
    """A labelled TSV (id, split, score, label, text) like the bundled data,
    split 70/15/15."""
    texts, labels = toy_sentences(num_examples, seed)
    n_train = int(0.7 * num_examples)
    n_dev = int(0.15 * num_examples)
    with open(path, "w", encoding="utf-8") as f:
        f.write("id\tsplit\tscore\tlabel\ttext\n")
        for i, (text, label) in enumerate(zip(texts, labels)):
            split = "train" if i < n_train else "dev" if i < n_train + n_dev else "test"
            f.write(f"{i}\t{split}\t{2 * label - 1}\t{label}\t{text}\n")
    return str(path)


# (num_layers, hidden_dim, seed, classifier, num_classes) -> a preset folder
# written once per process (`write_tiny_preset` copies it).
_PRESETS = {}


def write_tiny_preset(path, num_layers=2, hidden_dim=16, seed=0, classifier=False,
                      num_classes=2):
    """Saves a tiny random BERT backbone and its tokenizer as a keras-hub
    preset folder (what `teacher.source` accepts, like a real checkpoint).

    With `classifier`, a keras-hub `BertTextClassifier` (random head of
    `num_classes`) with its preprocessor instead: a teacher kdplug uses as
    it is, with no `teacher.finetune` (a backbone's new head would need it).

    Each set of arguments is built and saved once per process, and copied
    after that: the same arguments give the same bytes, so a teacher that
    kdplug fine-tuned and cached for one preset is found for its copies (the
    key hashes the preset's files; keras names a second model
    `bert_backbone_1`, so two saves differ), and a copy takes about 1 ms
    where building and saving took 0.4 s (2 busy CPU cores). Either way
    the global random seed is `seed` afterwards (what follows does not
    depend on whether this process wrote the preset before).

    Examples:

    ```python
    source = write_tiny_preset(tmp_path / "teacher", num_layers=2)
    keras_hub.models.Backbone.from_preset(source).num_layers   # 2
    ```
    """
    args = (num_layers, hidden_dim, seed, classifier, num_classes)
    written = _PRESETS.get(args)
    if written is None or not os.path.isdir(written):
        written = tempfile.mkdtemp(prefix="kdplug-tiny-preset-")
        atexit.register(shutil.rmtree, written, True)
        _save_tiny_preset(written, *args)
        _PRESETS[args] = written
    shutil.copytree(written, str(path), dirs_exist_ok=True)
    keras.utils.set_random_seed(seed)
    return str(path)


def _save_tiny_preset(path, num_layers, hidden_dim, seed, classifier, num_classes):
    vocabulary = toy_vocabulary()
    backbone = tiny_backbone(num_layers=num_layers, hidden_dim=hidden_dim,
                             vocabulary_size=len(vocabulary), seed=seed)
    tokenizer = keras_hub.tokenizers.BertTokenizer(vocabulary=vocabulary)
    if classifier:
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
            tokenizer, sequence_length=backbone.max_sequence_length)
        keras_hub.models.BertTextClassifier(
            backbone, num_classes, preprocessor=preprocessor).save_to_preset(path)
        return
    backbone.save_to_preset(path)
    tokenizer.save_to_preset(path)


def two_cpu_devices():
    """Splits the first CPU into two logical devices (call before TF starts).

    Returns the device names usable by `tf.distribute.MirroredStrategy`.
    """
    cpus = tf.config.list_physical_devices("CPU")
    try:
        tf.config.set_logical_device_configuration(
            cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2
        )
    except RuntimeError:
        pass  # already initialised; works if it was split before
    return [d.name for d in tf.config.list_logical_devices("CPU")][:2]


class StepLosses(keras.callbacks.Callback):
    """Records the loss after every training step (`losses`), for tests
    that compare training runs step by step.

    Examples:

    ```python
    steps = StepLosses()
    model.fit(ds, callbacks=[steps])
    steps.losses  # [0.69, 0.68, ...]
    ```
    """

    def __init__(self):
        super().__init__()
        self.losses = []

    def on_train_batch_end(self, batch, logs=None):
        self.losses.append(float(logs["loss"]))
