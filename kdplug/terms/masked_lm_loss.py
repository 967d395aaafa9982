import keras
import keras_hub
from keras import ops

from kdplug.errors import KdplugError
from kdplug.terms.term import Term

BATCH_KEYS = ("mask_positions", "mask_ids", "mask_weights")


@keras.saving.register_keras_serializable(package="kdplug")
class MaskedLMLoss(Term):
    """DistilBERT's masked-language-modelling loss on the student (Sanh et al. 2019).

    The term owns a `keras_hub.layers.MaskedLMHead` (dense + GELU + layer
    norm, then the transposed token embedding plus a bias) that reads the
    student's last hidden state at the masked positions. Tying the head to
    the student's token embedding means the head adds only `hidden^2 +
    3 * hidden + vocab` weights of its own, and because those weights belong
    to the *term* (trained by the `Distiller` like a projection), the
    exported classifier never contains them.

    The batch must carry what `kdplug.data.masking.mask_tokens` produces:
    `token_ids` with the masked tokens replaced, `mask_positions` and
    `mask_ids` (`(batch, P)` int) and `mask_weights` (`(batch, P)`, 1.0 for
    a real prediction, 0.0 for padding slots). Per example:

    `loss_i = sum_p w_ip * CE(mask_ids_ip, head(h_i)[p]) / sum_p w_ip`

    (zero for an example with no masked token). The masking options below
    are not used by the term itself: they tell the data pipeline
    (`kdplug.data.masking.stage_dataset`) how to mask batches for it.

    Args:
        hidden_tap: str. The student tap the head reads, e.g. `"hidden/3"`
            (the last layer).
        token_embedding: optional `keras_hub.layers.ReversibleEmbedding`
            (e.g. `student.backbone.token_embedding`) to tie the output
            projection to. Without it the head has its own output kernel.
        vocabulary_size: int. Needed without `token_embedding`.
        hidden_dim: int. Width of `hidden_tap`; defaults to the embedding's
            width.
        weight: float. Weight in the total loss.
        mask_rate: float. Fraction of eligible tokens selected (BERT: 0.15).
        max_predictions: int. Prediction slots per example (`P`); None means
            `ceil(sequence_length * mask_rate)`.
        mask_token_rate: float. Selected tokens replaced by [MASK] (0.8).
        random_token_rate: float. Selected tokens replaced by a random
            token (0.1); the rest are kept unchanged.

    Examples:

    ```python
    term = MaskedLMLoss(
        "hidden/3", token_embedding=student.backbone.token_embedding,
        weight=2.0)
    per_example = term({}, {"hidden/3": h}, masked_batch)
    ```
    """

    def __init__(self, hidden_tap, token_embedding=None, vocabulary_size=None,
                 hidden_dim=None, weight=1.0, mask_rate=0.15,
                 max_predictions=None, mask_token_rate=0.8,
                 random_token_rate=0.1, name=None, **kwargs):
        super().__init__(weight=weight, name=name or "mlm", **kwargs)
        if not 0.0 < mask_rate <= 1.0:
            raise KdplugError(f"mask_rate must be in (0, 1], got {mask_rate}")
        if not (0.0 <= mask_token_rate and 0.0 <= random_token_rate
                and mask_token_rate + random_token_rate <= 1.0):
            raise KdplugError(
                "mask_token_rate and random_token_rate must be >= 0 and sum to "
                f"<= 1, got {mask_token_rate} and {random_token_rate}"
            )
        if max_predictions is not None and max_predictions < 1:
            raise KdplugError(f"max_predictions must be >= 1, got {max_predictions}")
        if token_embedding is None and (vocabulary_size is None or hidden_dim is None):
            raise KdplugError(
                "MaskedLMLoss needs token_embedding, or vocabulary_size and "
                "hidden_dim"
            )
        if token_embedding is not None:
            vocabulary_size = token_embedding.input_dim
            hidden_dim = hidden_dim or token_embedding.output_dim
        self.hidden_tap = hidden_tap
        self.vocabulary_size = int(vocabulary_size)
        self.hidden_dim = int(hidden_dim)
        self.tied = token_embedding is not None
        self.masking = {
            "mask_rate": float(mask_rate),
            "max_predictions": max_predictions,
            "mask_token_rate": float(mask_token_rate),
            "random_token_rate": float(random_token_rate),
        }
        self.head = keras_hub.layers.MaskedLMHead(
            vocabulary_size=self.vocabulary_size,
            token_embedding=token_embedding,
            intermediate_activation="gelu",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=0.02),
            name="mlm_head",
        )
        self.head.build((None, None, self.hidden_dim))

    def required_student_taps(self):
        return {self.hidden_tap}

    def call(self, teacher, student, batch):
        missing = [k for k in BATCH_KEYS if k not in batch]
        if missing:
            raise KdplugError(
                f"{self.name}: the batch has no {missing}; mask it with "
                "kdplug.data.masking.apply_masking (or stage_dataset)"
            )
        positions = ops.cast(batch["mask_positions"], "int32")
        labels = ops.cast(batch["mask_ids"], "int32")
        weights = ops.cast(batch["mask_weights"], "float32")
        logits = self.head(student[self.hidden_tap], mask_positions=positions)
        ce = keras.losses.sparse_categorical_crossentropy(
            labels, ops.cast(logits, "float32"), from_logits=True
        )
        return ops.divide_no_nan(
            ops.sum(ce * weights, axis=-1), ops.sum(weights, axis=-1)
        )

    def get_config(self):
        # The tied embedding is the student's and is not serialised, so a
        # term rebuilt from this config is untied: its head gets an output
        # kernel of its own, `(hidden_dim, vocabulary_size)`, where the tied
        # head reads the embedding's transpose, and its intermediate layer is
        # `hidden_dim` wide, not the embedding's width. The two heads'
        # weights do not load into each other; runs never rebuild the term
        # from its config (a method creates its terms, tied to the student,
        # for every stage, and a resumed stage loads their saved weights).
        config = super().get_config()
        config.update(
            {
                "hidden_tap": self.hidden_tap,
                "vocabulary_size": self.vocabulary_size,
                "hidden_dim": self.hidden_dim,
                **self.masking,
            }
        )
        return config
