import keras

from kdplug import keys
from kdplug.errors import KdplugError
from kdplug.models import flops
from kdplug.models.bilstm_encoder import BiLstmEncoder
from kdplug.models.tap_names import check_tap_names

INPUT_KINDS = {
    # input: (ids key, padding-mask key)
    "token_ids": (keys.TOKEN_IDS, keys.PADDING_MASK),
    "word_ids": keys.WORD_INPUTS,
}


def resolve_input(input_key):
    if input_key not in INPUT_KINDS:
        raise KdplugError(
            f"input must be one of {sorted(INPUT_KINDS)}, got {input_key!r}"
        )
    return INPUT_KINDS[input_key]


def read_ids(inputs, ids_key, mask_key):
    if ids_key not in inputs:
        raise KdplugError(
            f"the batch has no {ids_key!r} (keys: {sorted(inputs)}); this "
            f"student reads {ids_key!r}"
        )
    return inputs[ids_key], inputs.get(mask_key)


class BiLstmMlpModel(keras.Model):
    """Shared body of the BiLSTM students: a `BiLstmEncoder`, a ReLU MLP head.

    Subclasses set `encoder_passes` (sentences encoded per example), define
    `feature_dim` (width of the `pooled` features) and `pooled_features(inputs,
    training)`; constructor arguments, taps (`pooled`, `logits`), FLOPs and
    config are shared.
    """

    encoder_passes = 1

    def __init__(self, vocabulary_size, num_classes, embedding_dim=128,
                 lstm_units=128, hidden_dim=256, dropout=0.1, input="token_ids",
                 pooling="max", **kwargs):
        super().__init__(**kwargs)
        self.ids_key, self.mask_key = resolve_input(input)
        self.input_kind = input
        self.input_keys = (self.ids_key, self.mask_key)
        self.num_classes = int(num_classes)
        self.hidden_dim = int(hidden_dim)
        self.dropout = float(dropout)
        self.encoder = BiLstmEncoder(
            vocabulary_size, embedding_dim, lstm_units, dropout,
            pooling=pooling, name="encoder")
        self.encoder.build()
        self.hidden = keras.layers.Dense(
            self.hidden_dim, activation="relu", name="hidden")
        self.hidden.build((None, self.feature_dim))
        self.output_dropout = keras.layers.Dropout(self.dropout, name="output_dropout")
        self.classifier = keras.layers.Dense(self.num_classes, name="logits")
        self.classifier.build((None, self.hidden_dim))
        self.built = True

    @property
    def feature_dim(self):
        raise NotImplementedError

    def pooled_features(self, inputs, training=False):
        raise NotImplementedError

    def available_taps(self):
        return ["pooled", "logits"]

    def tap_width(self, name):
        check_tap_names(self, [name], "pooled, logits")
        return self.num_classes if name == "logits" else self.feature_dim

    def call(self, inputs, training=False):
        return self.taps(inputs, ("logits",), training=training)["logits"]

    def taps(self, inputs, names=("logits",), training=False):
        names = check_tap_names(self, names, "pooled, logits")
        features = self.pooled_features(inputs, training=training)
        out = {}
        if "pooled" in names:
            out["pooled"] = features
        if "logits" in names:
            h = self.output_dropout(self.hidden(features), training=training)
            out["logits"] = self.classifier(h)
        return out

    def flops_per_example(self, sequence_length):
        """`encoder_passes` BiLSTM passes (`2 * 2S * 4u(E + u)` each, every
        sentence padded to `S`) plus the head `2 F D + 2 D C` (`F` =
        `feature_dim`)."""
        return (
            self.encoder_passes * self.encoder.flops_per_example(sequence_length)
            + flops.dense_flops(1, self.feature_dim, self.hidden_dim)
            + flops.dense_flops(1, self.hidden_dim, self.num_classes)
        )

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary_size": self.encoder.vocabulary_size,
                "num_classes": self.num_classes,
                "embedding_dim": self.encoder.embedding_dim,
                "lstm_units": self.encoder.lstm_units,
                "hidden_dim": self.hidden_dim,
                "dropout": self.dropout,
                "input": self.input_kind,
                "pooling": self.encoder.pooling,
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)


@keras.saving.register_keras_serializable(package="kdplug")
class BiLstmClassifier(BiLstmMlpModel):
    """Tang et al. (2019)'s student: BiLSTM, sentence vector, MLP head.

    Reads either the teacher's WordPiece ids (`input="token_ids"`, masked by
    `padding_mask`) or its own word ids (`input="word_ids"`, e.g. from
    `kdplug.models.WordTokenizer`, masked by `word_padding_mask` when the
    batch has it, else by `word_ids != 0`).

    Taps: `pooled` (the encoder's sentence vector, width `2 * lstm_units`:
    max-pooled states or the final states, see `BiLstmEncoder`) and
    `logits`. It has no layers or attention to map; asking for
    `attention/...` raises a `KdplugError` saying so.

    Args:
        vocabulary_size: int.
        num_classes: int.
        embedding_dim: int.
        lstm_units: int. Units per direction.
        hidden_dim: int. Width of the ReLU layer of the MLP head.
        dropout: float. Dropout on embeddings and before the classifier.
        input: `"token_ids"` or `"word_ids"`.
        pooling: `"max"` (default; kdplug 0.1's files have no key and load
            as `max`) or `"final_states"` (Tang et al.'s encoder).

    Examples:

    ```python
    model = BiLstmClassifier(vocabulary_size=30522, num_classes=2)
    paper = BiLstmClassifier(30522, 2, pooling="final_states")
    logits = model({"token_ids": ids, "padding_mask": mask})
    model.taps(batch, ["pooled", "logits"])
    ```
    """

    @property
    def feature_dim(self):
        return self.encoder.output_dim

    def pooled_features(self, inputs, training=False):
        ids, mask = read_ids(inputs, self.ids_key, self.mask_key)
        return self.encoder(ids, padding_mask=mask, training=training)
