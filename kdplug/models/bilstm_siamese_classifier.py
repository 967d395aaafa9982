import keras
from keras import ops

from kdplug.errors import KdplugError
from kdplug.models.bilstm_classifier import BiLstmMlpModel
from kdplug.models.bilstm_classifier import read_ids


@keras.saving.register_keras_serializable(package="kdplug")
class BiLstmSiameseClassifier(BiLstmMlpModel):
    """Tang et al. (2019)'s sentence-pair student: a shared BiLSTM encoder.

    Both sentences go through the same `BiLstmEncoder` (mask aware; max-pooled
    or final states, `pooling`) giving `h1`, `h2`; the features `[h1, h2, h1 * h2, |h1 - h2|]`
    (width `8 * lstm_units`) feed a ReLU MLP and the classifier.

    Inputs: `token_ids_a` / `padding_mask_a` and `token_ids_b` /
    `padding_mask_b` (WordPiece ids of each sentence, unpaired, as
    `kdplug.data.TextEncoder(..., pair_inputs=True)` adds them next to the
    teacher's joint `token_ids`; a batch without `token_ids_a` gives the
    first sentence as `token_ids` / `padding_mask`), or with
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
        pooling: `"max"` (default, as kdplug 0.1) or `"final_states"`
            (Tang et al.'s encoder); see `BiLstmEncoder`.

    Examples:

    ```python
    model = BiLstmSiameseClassifier(vocabulary_size=30522, num_classes=3)
    logits = model({"token_ids_a": a, "padding_mask_a": ma,
                    "token_ids_b": b, "padding_mask_b": mb})
    ```
    """

    encoder_passes = 2

    def __init__(self, vocabulary_size, num_classes, embedding_dim=128,
                 lstm_units=128, hidden_dim=256, dropout=0.1, input="token_ids",
                 pooling="max", **kwargs):
        super().__init__(vocabulary_size, num_classes,
                         embedding_dim=embedding_dim, lstm_units=lstm_units,
                         hidden_dim=hidden_dim, dropout=dropout, input=input,
                         pooling=pooling, **kwargs)
        first = (self.ids_key, self.mask_key)
        if input == "token_ids":
            # `token_ids` is the teacher's joint "[CLS] a [SEP] b [SEP]".
            first = ("token_ids_a", "padding_mask_a")
        self.input_keys = (*first, self.ids_key + "_b", self.mask_key + "_b")

    @property
    def feature_dim(self):
        return 4 * self.encoder.output_dim

    def pooled_features(self, inputs, training=False):
        ids_a_key, mask_a_key, ids_b_key, mask_b_key = self.input_keys
        if ids_b_key not in inputs:
            raise KdplugError(
                f"the batch has no {ids_b_key!r} (keys: {sorted(inputs)}); this "
                "siamese student reads each sentence of a pair on its own: "
                + ("encode pairs with kdplug.data.TextEncoder(..., "
                   "pair_inputs=True)" if self.input_kind == "token_ids" else
                   "add word ids with kdplug.data.word_encoder.word_dataset"))
        if ids_a_key not in inputs:
            ids_a_key, mask_a_key = self.ids_key, self.mask_key
        ids_a, mask_a = read_ids(inputs, ids_a_key, mask_a_key)
        ids_b, mask_b = read_ids(inputs, ids_b_key, mask_b_key)
        h1 = self.encoder(ids_a, padding_mask=mask_a, training=training)
        h2 = self.encoder(ids_b, padding_mask=mask_b, training=training)
        return ops.concatenate([h1, h2, h1 * h2, ops.abs(h1 - h2)], axis=-1)
