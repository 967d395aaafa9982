"""`KeyedInputs`: a model that reads its inputs under its own keys of a
batch shared with a model of another tokenizer."""

import keras

from kdplug import keys
from kdplug.models.bert_classifier import TappedClassifier


@keras.saving.register_keras_serializable(package="kdplug")
class KeyedInputs(TappedClassifier):
    """A tapped classifier that reads its token inputs under `prefix`.

    A teacher and a student with different tokenizers (a RoBERTa teacher
    and a BERT student, say) cannot read the same `token_ids`: each
    encodes the text with its own preprocessor. The batch then carries the
    teacher's `token_ids` / `segment_ids` / `padding_mask` and the
    student's encoding of the same examples under `student/...`
    (`kdplug.keys.student_key`), as a BiLSTM student's `word_ids` travel
    beside the teacher's word pieces. This wrapper gives the inner model
    its own features, renamed back to the names it knows, and answers
    every tap of the inner model; only per-example taps (`logits`,
    `pooled`, `cls/<i>`) can be compared with the teacher's, since the two
    models see different token positions.

    The inner model is what ships: `model` reads plain `token_ids` and is
    what the exports write (with the student's own tokenizer).

    Args:
        model: a tapped classifier (`BertClassifier`, `HubTextClassifier`).
        prefix: str. The keys' prefix in the shared batch.

    Examples:

    ```python
    student = KeyedInputs(HubTextClassifier(backbone, num_classes=2))
    batch = {"token_ids": teacher_ids, ...,
             "student/token_ids": ids, "student/segment_ids": segments,
             "student/padding_mask": mask}
    student.taps(batch, ["logits"])      # the inner model on `ids`
    student.model(own_batch)             # the model to ship
    ```
    """

    nested_key = "model"
    config_attributes = ("prefix",)

    def __init__(self, model, prefix=keys.STUDENT_PREFIX, **kwargs):
        super().__init__(**kwargs)
        self.model = model
        self.prefix = str(prefix)
        self.input_keys = tuple(self.prefix + k for k in model.input_keys)
        self.built = True

    def own_features(self, features):
        """The inner model's features out of a shared batch's."""
        return {name: features[self.prefix + name] for name in self.model.input_keys
                if self.prefix + name in features}

    def taps(self, inputs, names=("logits",), training=False):
        return self.model.taps(self.own_features(inputs), names, training=training)

    def available_taps(self):
        return self.model.available_taps()

    def compares(self, tap):
        """Whether `tap` can be compared with a model of another tokenizer:
        the per-example taps (`logits` of a sentence head, `pooled`,
        `cls/<i>`); hidden states, attention maps, embeddings and per-token
        logits run over this model's own token positions."""
        if tap == "logits":
            return not self.per_token
        return tap == "pooled" or tap.startswith("cls/")

    def offers(self):
        offers = getattr(self.model, "offers", None)
        return offers() if offers else ", ".join(self.available_taps())

    def tap_width(self, name):
        return self.model.tap_width(name)

    def flops_per_example(self, sequence_length):
        return self.model.flops_per_example(sequence_length)

    @property
    def family(self):
        return self.model.family

    @property
    def num_layers(self):
        return self.model.num_layers

    @property
    def num_classes(self):
        return self.model.num_classes

    @property
    def hidden_dim(self):
        return self.model.hidden_dim

    @property
    def num_heads(self):
        return self.model.num_heads

    @property
    def per_token(self):
        return bool(getattr(self.model, "per_token", False))
