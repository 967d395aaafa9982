import keras
from keras import ops

from kdplug.models import flops
from kdplug.models.bilstm_classifier import read_ids
from kdplug.models.bilstm_classifier import resolve_input
from kdplug.models.bilstm_encoder import BiLstmEncoder
from kdplug.models.tap_names import check_tap_names


@keras.saving.register_keras_serializable(package="kdplug")
class BiLstmSiameseClassifier(keras.Model):
    """Tang et al. (2019)'s sentence-pair student: a shared BiLSTM encoder.

    Both sentences go through the same `BiLstmEncoder` (max-pooled, mask
    aware) giving `h1`, `h2`; the features `[h1, h2, h1 * h2, |h1 - h2|]`
    (width `8 * lstm_units`) feed a ReLU MLP and the classifier.

    Inputs: `token_ids` / `padding_mask` and `token_ids_b` /
    `padding_mask_b` (WordPiece ids of each sentence, unpaired), or with
    `input="word_ids"`: `word_ids` / `word_padding_mask` and `word_ids_b` /
    `word_padding_mask_b` (masks optional; id 0 is padding).

    Taps: `pooled` (the combined features) and `logits`; no attention.

    Args:
        vocabulary_size: int.
        num_classes: int.
        embedding_dim: int.
        lstm_units: int. Units per direction.
        hidden_dim: int. Width of the ReLU layer of the MLP head.
        dropout: float.
        input: `"token_ids"` or `"word_ids"`.

    Examples:

    ```python
    model = BiLstmSiameseClassifier(vocabulary_size=30522, num_classes=3)
    logits = model({"token_ids": a, "padding_mask": ma,
                    "token_ids_b": b, "padding_mask_b": mb})
    ```
    """

    def __init__(self, vocabulary_size, num_classes, embedding_dim=128,
                 lstm_units=128, hidden_dim=256, dropout=0.1, input="token_ids",
                 **kwargs):
        super().__init__(**kwargs)
        self.ids_key, self.mask_key = resolve_input(input)
        self.input_kind = input
        self.input_keys = (self.ids_key, self.mask_key,
                           self.ids_key + "_b", self.mask_key + "_b")
        self.num_classes = int(num_classes)
        self.hidden_dim = int(hidden_dim)
        self.dropout = float(dropout)
        self.encoder = BiLstmEncoder(
            vocabulary_size, embedding_dim, lstm_units, dropout, name="encoder")
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
        return 4 * self.encoder.output_dim

    def available_taps(self):
        return ["pooled", "logits"]

    def tap_width(self, name):
        check_tap_names(self, [name], "pooled, logits")
        return self.num_classes if name == "logits" else self.feature_dim

    def call(self, inputs, training=False):
        return self.taps(inputs, ("logits",), training=training)["logits"]

    def taps(self, inputs, names=("logits",), training=False):
        names = check_tap_names(self, names, "pooled, logits")
        ids_a, mask_a = read_ids(inputs, self.ids_key, self.mask_key)
        ids_b, mask_b = read_ids(inputs, self.ids_key + "_b", self.mask_key + "_b")
        h1 = self.encoder(ids_a, padding_mask=mask_a, training=training)
        h2 = self.encoder(ids_b, padding_mask=mask_b, training=training)
        features = ops.concatenate([h1, h2, h1 * h2, ops.abs(h1 - h2)], axis=-1)
        out = {}
        if "pooled" in names:
            out["pooled"] = features
        if "logits" in names:
            h = self.output_dropout(self.hidden(features), training=training)
            out["logits"] = self.classifier(h)
        return out

    def flops_per_example(self, sequence_length):
        """Two encoder passes (each sentence padded to `S`) plus the head
        `2 (8u) D + 2 D C`."""
        return (
            2 * self.encoder.flops_per_example(sequence_length)
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
            }
        )
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
