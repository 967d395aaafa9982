"""Tiny, random models of every keras-hub text family, built offline.

For tests (kdplug's and plugin authors') that must cover each family a
teacher or student can come from, without downloading a checkpoint:

- `tiny_tokenizer(family, folder)`: a tokenizer of the family's kind,
  built from files written into `folder`: WordPiece (bert, distil_bert,
  electra) on `kdplug.testing.toy_vocabulary()`; byte-level BPE (roberta)
  whose vocabulary and merges are learned here from the toy sentences;
  SentencePiece (xlm_roberta, albert, deberta_v3) trained in memory on the
  toy sentences with the special tokens of the family's real model.
- `tiny_backbone(family, vocabulary_size)`: a random keras-hub backbone
  (hidden 16, 2 layers, 2 heads).
- `write_tiny_preset(family, folder)`: a keras-hub preset folder (backbone
  and tokenizer, or with `classifier=True` a whole `<Family>TextClassifier`
  with its preprocessor and a recognisable head, `HEAD_BIAS`), as
  `save_to_preset` writes it.
- `write_tiny_hf_folder(family, folder)`: a Hugging Face model folder
  (`config.json`, `model.safetensors`, tokenizer files) that keras-hub's
  converter loads, for the families keras-hub 0.32 converts (`HF_FAMILIES`);
  with `classifier=True`, a `...ForSequenceClassification` head too.

Sizes: hidden 16, intermediate 32, 2 heads, position embeddings for 32
tokens (`MAX_SEQUENCE_LENGTH`), vocabularies under 100 entries; a
classifier's preprocessor cuts at `SEQUENCE_LENGTH` (16) tokens. Every
function needs `sentencepiece` for the SentencePiece families (a keras-hub
dependency) and `safetensors` for Hugging Face folders.

Examples:

```python
import keras_hub
from kdplug.testing import families

for family in families.FAMILIES:
    folder = families.write_tiny_preset(family, tmp_path / family)
    backbone = keras_hub.models.Backbone.from_preset(folder)
    tokenizer = keras_hub.models.Tokenizer.from_preset(folder)

folder = families.write_tiny_hf_folder("roberta", tmp_path / "hf", classifier=True)
task = keras_hub.models.TextClassifier.from_preset(folder, num_classes=2)
```
"""

import collections
import io
import json
import os
import tempfile

import keras
import keras_hub
import numpy as np
from safetensors.numpy import save_file

from kdplug.teacher.hf_heads import HF_MODEL_TYPES
from kdplug.testing import toy_sentences
from kdplug.testing import toy_vocabulary

FAMILIES = ("bert", "distil_bert", "roberta", "xlm_roberta", "albert", "deberta_v3",
            "electra")
# keras-hub 0.32 has an ElectraBackbone but no ElectraTextClassifier.
CLASSIFIER_FAMILIES = tuple(f for f in FAMILIES if f != "electra")
# The families keras-hub 0.32 converts from Hugging Face format
# (keras_hub/src/utils/transformers/convert_*.py).
HF_FAMILIES = ("bert", "distil_bert", "roberta", "xlm_roberta", "albert")

# keras-hub's class prefix of each family: `<prefix>Backbone`, ...
CLASS_PREFIXES = {
    "bert": "Bert",
    "distil_bert": "DistilBert",
    "roberta": "Roberta",
    "xlm_roberta": "XLMRoberta",
    "albert": "Albert",
    "deberta_v3": "DebertaV3",
    "electra": "Electra",
}
TOKENIZER_KINDS = {
    "bert": "wordpiece", "distil_bert": "wordpiece", "electra": "wordpiece",
    "roberta": "bpe",
    "xlm_roberta": "sentencepiece", "albert": "sentencepiece",
    "deberta_v3": "sentencepiece",
}

HIDDEN_DIM = 16
NUM_HEADS = 2
MAX_SEQUENCE_LENGTH = 32
SEQUENCE_LENGTH = 16  # a classifier preset's preprocessor
HEAD_BIAS = (5.0, -5.0)  # the output bias of every classifier head written here

# Hugging Face's file names, used for the keras-hub tokenizers' sources too.
_TOKENIZER_FILES = {
    "wordpiece": ("vocab.txt",),
    "bpe": ("vocab.json", "merges.txt"),
    "xlm_roberta": ("sentencepiece.bpe.model",),
    "albert": ("spiece.model",),
    "deberta_v3": ("spm.model",),
}
# The special pieces of each family's real SentencePiece model, at the ids
# its keras-hub tokenizer expects: ALBERT 0 <pad>, 1 <unk>, 2 [CLS], 3 [SEP],
# 4 [MASK]; DeBERTa-v3 0 [PAD], 1 [CLS], 2 [SEP], 3 [UNK] ([MASK] comes after
# the pieces, as in the real model); XLM-RoBERTa fairseq's 0 <unk>, 1 <s>,
# 2 </s> (the tokenizer shifts them to <s> <pad> </s> <unk>, adds <mask>).
_SENTENCEPIECE_SPECIALS = {
    "albert": dict(pad_id=0, unk_id=1, bos_id=-1, eos_id=-1, pad_piece="<pad>",
                   control_symbols=["[CLS]", "[SEP]", "[MASK]"]),
    "deberta_v3": dict(pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]",
                       bos_piece="[CLS]", eos_piece="[SEP]", unk_piece="[UNK]"),
    "xlm_roberta": dict(unk_id=0, bos_id=1, eos_id=2, pad_id=-1),
}
_BPE_SPECIALS = ("<s>", "<pad>", "</s>", "<unk>")  # ids 0-3, <mask> last
_BPE_SIZE = 96
_SPACE = "\u0120"  # byte-level BPE's character for the space byte ("Ġ")


def _check_family(family, allowed=FAMILIES, what="a family"):
    if family not in allowed:
        raise ValueError(f"family must be {what}: one of {', '.join(allowed)}; "
                         f"got {family!r}")


def _file_kind(family):
    kind = TOKENIZER_KINDS[family]
    return family if kind == "sentencepiece" else kind


def _byte_level_bpe(texts, size):
    """Learns byte-level BPE merges on `texts` (lowercase letters and
    spaces), the classic way: merge the most frequent adjacent pair, again
    and again, until the vocabulary has `size` entries. Returns
    `(vocabulary {token: id}, merges ["a b", ...])`."""
    words = collections.Counter()
    for text in texts:
        for i, word in enumerate(text.split()):
            words[(_SPACE if i else "") + word] += 1  # a space joins the next word
    alphabet = [chr(c) for c in range(ord("a"), ord("z") + 1)] + [_SPACE]
    vocabulary = {token: i for i, token in enumerate(_BPE_SPECIALS + tuple(alphabet))}
    pieces = {word: list(word) for word in words}
    merges = []
    while len(vocabulary) < size - 1:  # room for <mask>
        pairs = collections.Counter()
        for word, count in words.items():
            for pair in zip(pieces[word], pieces[word][1:]):
                pairs[pair] += count
        if not pairs:
            break
        (a, b), _ = min(pairs.items(), key=lambda item: (-item[1], item[0]))
        merges.append(f"{a} {b}")
        vocabulary.setdefault(a + b, len(vocabulary))
        for word, parts in pieces.items():
            joined, i = [], 0
            while i < len(parts):
                if parts[i:i + 2] == [a, b]:
                    joined.append(a + b)
                    i += 2
                else:
                    joined.append(parts[i])
                    i += 1
            pieces[word] = joined
    vocabulary["<mask>"] = len(vocabulary)
    return vocabulary, merges


def _sentencepiece_proto(family, texts):
    """A unigram SentencePiece model trained in memory on `texts` (about 50
    pieces: the toy sentences hold 22 words), with the family's specials."""
    import sentencepiece

    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(texts), model_writer=model, vocab_size=64,
        model_type="unigram", hard_vocab_limit=False, num_threads=1,
        minloglevel=2, **_SENTENCEPIECE_SPECIALS[family])
    return model.getvalue()


def write_tokenizer_files(family, folder):
    """Writes the family's tokenizer source files into `folder`, under
    Hugging Face's names: `vocab.txt` (WordPiece), `vocab.json` and
    `merges.txt` (RoBERTa's BPE), `sentencepiece.bpe.model` (XLM-RoBERTa),
    `spiece.model` (ALBERT) or `spm.model` (DeBERTa-v3).

    Args:
        family: one of `FAMILIES`.
        folder: where to write (created if missing).

    Returns:
        The paths written, in the order above.
    """
    _check_family(family)
    os.makedirs(folder, exist_ok=True)
    kind = _file_kind(family)
    paths = [os.path.join(str(folder), name) for name in _TOKENIZER_FILES[kind]]
    texts, _ = toy_sentences()
    if kind == "wordpiece":
        with open(paths[0], "w", encoding="utf-8") as f:
            f.write("".join(token + "\n" for token in toy_vocabulary()))
    elif kind == "bpe":
        vocabulary, merges = _byte_level_bpe(texts, _BPE_SIZE)
        with open(paths[0], "w", encoding="utf-8") as f:
            json.dump(vocabulary, f, ensure_ascii=False)
        with open(paths[1], "w", encoding="utf-8") as f:
            f.write("#version: 0.2\n" + "".join(m + "\n" for m in merges))
    else:
        with open(paths[0], "wb") as f:
            f.write(_sentencepiece_proto(family, texts))
    return paths


def tiny_tokenizer(family, folder):
    """A tiny keras-hub tokenizer of the family (`<Family>Tokenizer`), built
    offline from files written into `folder` (`write_tokenizer_files`).

    WordPiece families lowercase, as `do_lower_case` BERT checkpoints do.
    Every toy sentence (`kdplug.testing.toy_sentences`) tokenizes without
    unknown tokens.

    Args:
        family: one of `FAMILIES`.
        folder: where the vocabulary / merges / SentencePiece model go.

    Returns:
        The tokenizer; `tokenizer.vocabulary_size()` is what the family's
        backbone needs (SentencePiece tokenizers may add ids beyond the
        model's pieces, e.g. XLM-RoBERTa's `<mask>`).

    Examples:

    ```python
    tokenizer = tiny_tokenizer("albert", tmp_path)
    tokenizer("good movie")           # ids within tokenizer.vocabulary_size()
    ```
    """
    paths = write_tokenizer_files(family, folder)
    cls = getattr(keras_hub.models, CLASS_PREFIXES[family] + "Tokenizer")
    kind = TOKENIZER_KINDS[family]
    if kind == "wordpiece":
        return cls(vocabulary=paths[0], lowercase=True)
    if kind == "bpe":
        return cls(vocabulary=paths[0], merges=paths[1])
    return cls(proto=paths[0])


def tiny_backbone(family, vocabulary_size, num_layers=2, hidden_dim=HIDDEN_DIM,
                  seed=0, **kwargs):
    """A tiny random keras-hub backbone of the family (dropout 0).

    Args:
        family: one of `FAMILIES`.
        vocabulary_size: the tokenizer's `vocabulary_size()`.
        num_layers: transformer layers (ALBERT: one shared group repeated).
        hidden_dim: hidden width; the intermediate width is twice it, ALBERT's
            and ELECTRA's embeddings half of it.
        seed: seeds Keras' random initialisers (`keras.utils.set_random_seed`,
            which also seeds Python and NumPy).
        **kwargs: overrides of the backbone's arguments (`num_heads`,
            `max_sequence_length`, ...).

    Returns:
        The `<Family>Backbone`.

    Examples:

    ```python
    backbone = tiny_backbone("deberta_v3", vocabulary_size=60)
    backbone.hidden_dim               # 16
    ```
    """
    _check_family(family)
    keras.utils.set_random_seed(seed)
    args = dict(num_layers=num_layers, num_heads=NUM_HEADS, hidden_dim=hidden_dim,
                intermediate_dim=2 * hidden_dim, dropout=0.0,
                max_sequence_length=MAX_SEQUENCE_LENGTH)
    if family == "electra":
        args.update(vocab_size=vocabulary_size, embedding_dim=hidden_dim // 2)
    else:
        args.update(vocabulary_size=vocabulary_size)
    if family == "albert":
        args.update(embedding_dim=hidden_dim // 2, num_groups=1, num_inner_repetitions=1)
    if family == "deberta_v3":
        args.update(bucket_size=MAX_SEQUENCE_LENGTH // 2)
    args.update(kwargs)
    cls = getattr(keras_hub.models, CLASS_PREFIXES[family] + "Backbone")
    return cls(**args)


def head_layers(task):
    """The Dense layers of a keras-hub TextClassifier's head, by attribute:
    `{"output_dense": ...}`, with `pooled_dense` first where the family has
    one (DistilBERT, RoBERTa, XLM-RoBERTa, DeBERTa-v3)."""
    return {name: getattr(task, name) for name in ("pooled_dense", "output_dense")
            if hasattr(task, name)}


def _recognisable(shape, low, high):
    return np.linspace(low, high, int(np.prod(shape)), dtype="float32").reshape(shape)


def set_recognisable_head(task):
    """Gives a TextClassifier's head recognisable non-zero weights: kernels
    evenly spaced in [-0.5, 0.5], `pooled_dense`'s bias in [-0.1, 0.1] and
    `output_dense`'s bias `HEAD_BIAS` repeated ([5, -5, 5, ...]).

    Returns:
        `{layer name: (kernel, bias)}`, the NumPy values assigned.
    """
    values = {}
    for name, layer in head_layers(task).items():
        kernel = _recognisable(tuple(layer.kernel.shape), -0.5, 0.5)
        width = layer.bias.shape[0]
        bias = (np.resize(np.array(HEAD_BIAS, "float32"), width) if name == "output_dense"
                else _recognisable((width,), -0.1, 0.1))
        layer.kernel.assign(kernel)
        layer.bias.assign(bias)
        values[name] = (kernel, bias)
    return values


def write_tiny_preset(family, folder, num_layers=2, seed=0, classifier=False,
                      num_classes=2):
    """Saves a tiny random model of the family as a keras-hub preset folder.

    `keras_hub.models.Backbone.from_preset(folder)` and
    `keras_hub.models.Tokenizer.from_preset(folder)` load it back (a preset
    is what `teacher.source` accepts, like a downloaded checkpoint).

    Args:
        family: one of `FAMILIES`.
        folder: the preset folder (created).
        num_layers: transformer layers.
        seed: seeds the backbone's initialisers.
        classifier: save a `<Family>TextClassifier` instead (its
            preprocessor cuts at `SEQUENCE_LENGTH` tokens; dropout 0), whose
            head has the recognisable weights of `set_recognisable_head`
            (`output_dense` bias `[5, -5]`); `TextClassifier.from_preset`
            loads it with those weights. Not for `electra`: keras-hub 0.32
            has no ElectraTextClassifier, so this raises `ValueError`.
        num_classes: the classifier's classes.

    Returns:
        `folder`, as a string.

    Examples:

    ```python
    folder = write_tiny_preset("roberta", tmp_path / "roberta", classifier=True)
    task = keras_hub.models.TextClassifier.from_preset(folder)
    task.predict(["good movie"])      # the bias [5, -5] dominates
    ```
    """
    _check_family(family)
    if classifier:
        _check_family(family, CLASSIFIER_FAMILIES,
                      "a family with a keras-hub TextClassifier (not electra)")
    folder = str(folder)
    with tempfile.TemporaryDirectory() as sources:
        tokenizer = tiny_tokenizer(family, sources)  # reads its files now
        backbone = tiny_backbone(family, tokenizer.vocabulary_size(),
                                 num_layers=num_layers, seed=seed)
    if not classifier:
        backbone.save_to_preset(folder)
        tokenizer.save_to_preset(folder)
        return folder
    prefix = CLASS_PREFIXES[family]
    preprocessor = getattr(keras_hub.models, prefix + "TextClassifierPreprocessor")(
        tokenizer, sequence_length=SEQUENCE_LENGTH)
    task = getattr(keras_hub.models, prefix + "TextClassifier")(
        backbone, num_classes=num_classes, preprocessor=preprocessor, dropout=0.0)
    set_recognisable_head(task)
    task.save_to_preset(folder)
    return folder


# --- Hugging Face folders -------------------------------------------------

def _hf_config(family, vocabulary_size, num_layers):
    """config.json of the family's Hugging Face model (the sizes and the
    names its keras-hub converter reads)."""
    hidden, heads, inner = HIDDEN_DIM, NUM_HEADS, 2 * HIDDEN_DIM
    if family == "distil_bert":
        return dict(vocab_size=vocabulary_size, dim=hidden, n_layers=num_layers,
                    n_heads=heads, hidden_dim=inner, dropout=0.0,
                    attention_dropout=0.0, activation="gelu",
                    max_position_embeddings=MAX_SEQUENCE_LENGTH, pad_token_id=0)
    config = dict(vocab_size=vocabulary_size, hidden_size=hidden,
                  num_hidden_layers=num_layers, num_attention_heads=heads,
                  intermediate_size=inner, hidden_act="gelu",
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                  max_position_embeddings=MAX_SEQUENCE_LENGTH, type_vocab_size=2,
                  layer_norm_eps=1e-12, pad_token_id=0)
    if family in ("roberta", "xlm_roberta"):
        # Two reserved position rows (padding_idx 1), one token type.
        config.update(max_position_embeddings=MAX_SEQUENCE_LENGTH + 2,
                      type_vocab_size=1, pad_token_id=1, bos_token_id=0,
                      eos_token_id=2, layer_norm_eps=1e-5)
    if family == "albert":
        config.update(embedding_size=hidden // 2, num_hidden_groups=1,
                      inner_group_num=1, pad_token_id=0)
    return config


def _linear(name, out_dim, in_dim):
    return {f"{name}.weight": (out_dim, in_dim), f"{name}.bias": (out_dim,)}


def _norm(name, dim, weight="weight", bias="bias"):
    return {f"{name}.{weight}": (dim,), f"{name}.{bias}": (dim,)}


def _hf_tensor_shapes(family, config, num_layers):
    """`{name: shape}` of every tensor the family's keras-hub converter
    reads, under the names of a bare Hugging Face model (no base prefix)."""
    h, inner, v = HIDDEN_DIM, 2 * HIDDEN_DIM, config["vocab_size"]
    positions = config["max_position_embeddings"]
    shapes = {}
    if family == "distil_bert":
        shapes["embeddings.word_embeddings.weight"] = (v, h)
        shapes["embeddings.position_embeddings.weight"] = (positions, h)
        shapes.update(_norm("embeddings.LayerNorm", h))
        for i in range(num_layers):
            layer = f"transformer.layer.{i}"
            for part in ("q_lin", "k_lin", "v_lin", "out_lin"):
                shapes.update(_linear(f"{layer}.attention.{part}", h, h))
            shapes.update(_norm(f"{layer}.sa_layer_norm", h))
            shapes.update(_linear(f"{layer}.ffn.lin1", inner, h))
            shapes.update(_linear(f"{layer}.ffn.lin2", h, inner))
            shapes.update(_norm(f"{layer}.output_layer_norm", h))
        return shapes
    if family == "albert":
        e = config["embedding_size"]
        shapes["embeddings.word_embeddings.weight"] = (v, e)
        shapes["embeddings.position_embeddings.weight"] = (positions, e)
        shapes["embeddings.token_type_embeddings.weight"] = (config["type_vocab_size"], e)
        shapes.update(_norm("embeddings.LayerNorm", e))
        shapes.update(_linear("encoder.embedding_hidden_mapping_in", h, e))
        layer = "encoder.albert_layer_groups.0.albert_layers.0"  # shared by all layers
        for part in ("query", "key", "value", "dense"):
            shapes.update(_linear(f"{layer}.attention.{part}", h, h))
        shapes.update(_norm(f"{layer}.attention.LayerNorm", h))
        shapes.update(_linear(f"{layer}.ffn", inner, h))
        shapes.update(_linear(f"{layer}.ffn_output", h, inner))
        shapes.update(_norm(f"{layer}.full_layer_layer_norm", h))
        shapes.update(_linear("pooler", h, h))
        return shapes
    # BERT, RoBERTa and XLM-RoBERTa share the encoder layout.
    shapes["embeddings.word_embeddings.weight"] = (v, h)
    shapes["embeddings.position_embeddings.weight"] = (positions, h)
    if family != "roberta":  # keras-hub's RoBERTa converter reads no token types
        shapes["embeddings.token_type_embeddings.weight"] = (config["type_vocab_size"], h)
    shapes.update(_norm("embeddings.LayerNorm", h))
    for i in range(num_layers):
        layer = f"encoder.layer.{i}"
        for part in ("self.query", "self.key", "self.value", "output.dense"):
            shapes.update(_linear(f"{layer}.attention.{part}", h, h))
        shapes.update(_norm(f"{layer}.attention.output.LayerNorm", h))
        shapes.update(_linear(f"{layer}.intermediate.dense", inner, h))
        shapes.update(_linear(f"{layer}.output.dense", h, inner))
        shapes.update(_norm(f"{layer}.output.LayerNorm", h))
    if family == "bert":
        shapes.update(_linear("pooler.dense", h, h))
    return shapes


def _hf_head_shapes(family, num_classes):
    """The `...ForSequenceClassification` head's tensors (at the root)."""
    h = HIDDEN_DIM
    if family in ("bert", "albert"):
        return _linear("classifier", num_classes, h)
    if family == "distil_bert":
        return {**_linear("pre_classifier", h, h), **_linear("classifier", num_classes, h)}
    return {**_linear("classifier.dense", h, h),
            **_linear("classifier.out_proj", num_classes, h)}


def _base_prefix(family, classifier):
    """The prefix of the base model's tensors: Hugging Face saves a task
    model's base under `<base_model_prefix>.`, a bare model without it.
    keras-hub's converters for DistilBERT, RoBERTa and ALBERT read the
    prefixed names only, so those are always prefixed here."""
    if family == "bert":
        return "bert." if classifier else ""
    if family == "xlm_roberta":
        return "roberta." if classifier else ""
    return HF_MODEL_TYPES[family] + "."


def write_tiny_hf_folder(family, folder, classifier=False, num_classes=2,
                         label_names=None, num_layers=2, seed=0):
    """Writes a tiny random Hugging Face model folder of the family.

    The folder holds `config.json` (`model_type`, `architectures`, the
    sizes), `model.safetensors` (random float32 tensors with exactly the
    names and shapes keras-hub's converter reads) and the tokenizer files
    its converter reads (`write_tokenizer_files`, plus `tokenizer_config.json`).
    `keras_hub.models.Backbone.from_preset(folder)` and
    `keras_hub.models.Tokenizer.from_preset(folder)` load it.

    Only for `HF_FAMILIES` (bert, distil_bert, roberta, xlm_roberta, albert):
    keras-hub 0.32 has no converter for DeBERTa-v3 or ELECTRA folders.

    Args:
        family: one of `HF_FAMILIES`.
        folder: the folder (created).
        classifier: also write the `...ForSequenceClassification` head at the
            root (`classifier.*`; DistilBERT `pre_classifier.*` +
            `classifier.*`; RoBERTa / XLM-RoBERTa `classifier.dense.*` +
            `classifier.out_proj.*`), its output bias `HEAD_BIAS` repeated
            ([5, -5]), with `architectures: ["<X>ForSequenceClassification"]`
            and `id2label` / `label2id` in config.json; the base model's
            tensors then carry Hugging Face's prefix (`bert.`, `roberta.`).
        num_classes: the head's classes.
        label_names: the class names for `id2label`; `None` writes Hugging
            Face's default `LABEL_0, LABEL_1, ...`.
        num_layers: transformer layers.
        seed: seeds the random tensors.

    Returns:
        `folder`, as a string.

    Examples:

    ```python
    folder = write_tiny_hf_folder("bert", tmp_path / "hf", classifier=True,
                                  label_names=["negative", "positive"])
    backbone = keras_hub.models.Backbone.from_preset(folder)
    ```
    """
    _check_family(family, HF_FAMILIES,
                  "a family keras-hub converts from Hugging Face format")
    folder = str(folder)
    tokenizer = tiny_tokenizer(family, folder)
    config = _hf_config(family, tokenizer.vocabulary_size(), num_layers)
    prefix = CLASS_PREFIXES[family]
    config = dict(model_type=HF_MODEL_TYPES[family],
                  architectures=[prefix + ("ForSequenceClassification" if classifier
                                           else "Model")],
                  **config)
    rng = np.random.default_rng(seed)

    def random(name, shape):
        values = rng.normal(0.0, 0.02, size=shape).astype("float32")
        if "norm" in name.lower() and name.endswith((".weight", ".gamma")):
            values += 1.0  # LayerNorm scales near one, as trained models have
        return values

    base = _base_prefix(family, classifier)
    tensors = {base + name: random(name, shape)
               for name, shape in _hf_tensor_shapes(family, config, num_layers).items()}
    if classifier:
        if label_names is None:
            label_names = [f"LABEL_{i}" for i in range(num_classes)]
        if len(label_names) != num_classes:
            raise ValueError(f"label_names has {len(label_names)} names for "
                             f"num_classes={num_classes}")
        config["id2label"] = {str(i): name for i, name in enumerate(label_names)}
        config["label2id"] = {name: i for i, name in enumerate(label_names)}
        head = {name: random(name, shape)
                for name, shape in _hf_head_shapes(family, num_classes).items()}
        out_bias = [name for name in head if name.endswith(".bias")][-1]
        head[out_bias] = np.resize(np.array(HEAD_BIAS, "float32"), num_classes)
        tensors.update(head)
    save_file(tensors, os.path.join(folder, "model.safetensors"),
              metadata={"format": "pt"})
    with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
    tokenizer_config = {"tokenizer_class": prefix + "Tokenizer",
                        "model_max_length": MAX_SEQUENCE_LENGTH}
    if TOKENIZER_KINDS[family] == "wordpiece":
        tokenizer_config["do_lower_case"] = True
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(tokenizer_config, f, indent=2)
    return folder
