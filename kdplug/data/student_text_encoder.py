"""The student's own subword encoding, for a student whose tokenizer is not
the teacher's."""

import json
import os

from kdplug import keys
from kdplug.data.text_encoder import TextEncoder
from kdplug.errors import KdplugError


class StudentTextEncoder:
    """Encodes texts with the student's own keras-hub tokenizer and puts the
    features under `student/` keys (`kdplug.keys.student_key`).

    A student of another family than its teacher (`student.kind: hub`, a
    RoBERTa teacher with a BERT student) reads other word pieces: every
    batch carries the teacher's encoding and this one, of the same
    examples in the same order, as a word-id student's `word_ids` travel
    beside the teacher's tokens (the same `features(examples)` contract as
    `kdplug.data.WordEncoder`, so `word_dataset` and the teacher-output
    cache's streaming take either). A pair is packed the student's way
    (`[CLS] a [SEP] b [SEP]`, or `<s> a </s></s> b </s>`).

    Args:
        tokenizer: a keras-hub tokenizer (the student's preprocessor's).
        sequence_length: int. Padded length in the student's tokens.
        prefix: str. The keys' prefix (`kdplug.models.KeyedInputs` reads
            the same one).

    Examples:

    ```python
    encoder = StudentTextEncoder(student_tokenizer, sequence_length=64)
    train_ds = word_dataset(teacher_encoder, encoder, splits["train"], 32)
    encoder.save(os.path.join(run_dir, "student_tokenizer"), student.model.backbone)
    ```
    """

    def __init__(self, tokenizer, sequence_length, prefix=keys.STUDENT_PREFIX):
        self.encoder = TextEncoder(tokenizer, sequence_length)
        self.prefix = prefix

    @property
    def tokenizer(self):
        return self.encoder.tokenizer

    @property
    def sequence_length(self):
        return self.encoder.sequence_length

    def features(self, examples):
        """`{student/<input>: (len(examples), sequence_length) int32}`."""
        encoded = self.encoder.encode_examples(examples, pair_inputs=False)
        return {self.prefix + name: encoded[name] for name in keys.TOKEN_INPUTS}

    def save(self, folder, backbone):
        """Writes the tokenizer as a keras-hub preset folder that `load`
        (and `keras_hub.models.Tokenizer.from_preset`) reads: its files and
        the `config.json` of the student's `backbone` (the architecture
        only, which names the tokenizer's family; the weights stay in the
        student's own file)."""
        import keras

        os.makedirs(folder, exist_ok=True)
        self.tokenizer.save_to_preset(folder)
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
            json.dump(keras.saving.serialize_keras_object(backbone), f, indent=4)

    @classmethod
    def load(cls, folder, sequence_length):
        import keras_hub

        try:
            tokenizer = keras_hub.models.Tokenizer.from_preset(folder)
        except Exception as e:  # keras-hub raises several types for bad presets
            raise KdplugError(f"{folder}: cannot load the student's tokenizer: {e}") from None
        return cls(tokenizer, sequence_length)
