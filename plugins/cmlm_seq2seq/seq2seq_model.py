import keras
import numpy as np
from keras import ops

from kdplug.errors import KdplugError
from kdplug.models import check_tap_names
from kdplug_plugins.cmlm_seq2seq import seq2seq_keys as sk


class Seq2SeqModel(keras.Model):
    """What every `cmlm-seq2seq` student shares: its inputs, `call`, `taps`
    and config; subclasses define `encode()`, `decode_states()` and
    `project()`.

    `encode(token_ids, padding_mask)` returns the source's encoding,
    `decode_states(encoder_outputs, encoder_padding_mask, token_ids,
    padding_mask)` the decoder's states at every position and
    `project(states)` their word-piece logits, so decoding
    (`Seq2SeqDecoder`) encodes a batch once, decodes its prefixes step by
    step and projects only the position it extends.

    Args:
        vocabulary_size: int. The output (and input) word-piece vocabulary.
        max_source_length: int. Encoder positions.
        max_target_length: int. Target word pieces; the decoder reads one
            more (the start token) and predicts one more (the end token).

    Examples:

    ```python
    logits = model(batch)                    # (batch, T + 1, vocabulary)
    model.taps(batch, ["logits"])["logits"]  # the same, for the Distiller
    ```
    """

    def __init__(self, vocabulary_size, max_source_length, max_target_length,
                 **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = int(vocabulary_size)
        self.max_source_length = int(max_source_length)
        self.max_target_length = int(max_target_length)

    @property
    def decoder_length(self):
        """Decoder positions: `max_target_length + 1`."""
        return self.max_target_length + 1

    def build_with_dummy_inputs(self):
        """Creates every weight (a subclassed model has none until called),
        so that a model rebuilt from its config loads saved weights."""
        src = np.ones((1, self.max_source_length), "int32")
        dec = np.ones((1, self.decoder_length), "int32")
        self({sk.ENCODER_TOKEN_IDS: src, sk.ENCODER_PADDING_MASK: src,
              sk.DECODER_TOKEN_IDS: dec, sk.DECODER_PADDING_MASK: dec})

    def encode(self, token_ids, padding_mask, training=False):
        raise NotImplementedError(f"{type(self).__name__}.encode()")

    def decode_states(self, encoder_outputs, encoder_padding_mask, token_ids,
                      padding_mask, training=False):
        raise NotImplementedError(f"{type(self).__name__}.decode_states()")

    def project(self, states, training=False):
        raise NotImplementedError(f"{type(self).__name__}.project()")

    def decode(self, encoder_outputs, encoder_padding_mask, token_ids,
               padding_mask, training=False):
        """Logits `(batch, target_length, vocabulary_size)` of the next word
        piece at every decoder position: `project(decode_states(...))`."""
        return self.project(self.decode_states(
            encoder_outputs, encoder_padding_mask, token_ids, padding_mask,
            training=training), training=training)

    def call(self, inputs, training=False):
        missing = [k for k in sk.STUDENT_INPUTS if k not in inputs]
        if missing:
            raise KdplugError(
                f"{type(self).__name__} reads {list(sk.STUDENT_INPUTS)}; the batch "
                f"has no {missing} (keys: {sorted(inputs)})")
        encoder_mask = ops.cast(inputs[sk.ENCODER_PADDING_MASK], "bool")
        decoder_mask = ops.cast(inputs[sk.DECODER_PADDING_MASK], "bool")
        encoded = self.encode(inputs[sk.ENCODER_TOKEN_IDS], encoder_mask,
                              training=training)
        return self.decode(encoded, encoder_mask, inputs[sk.DECODER_TOKEN_IDS],
                           decoder_mask, training=training)

    def available_taps(self):
        return ["logits"]

    def taps(self, inputs, names=("logits",), training=False):
        """`{"logits": (batch, decoder length, vocabulary)}`."""
        check_tap_names(self, names, "logits")
        return {"logits": self(inputs, training=training)}

    def get_config(self):
        config = super().get_config()
        config.update({
            "vocabulary_size": self.vocabulary_size,
            "max_source_length": self.max_source_length,
            "max_target_length": self.max_target_length,
        })
        return config

    @classmethod
    def from_config(cls, config):
        return cls(**config)
