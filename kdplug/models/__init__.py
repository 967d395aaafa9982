"""kdplug's models: every one offers `taps(inputs, names, training)`,
`available_taps()`, `tap_width(name)`, `count_params()` and
`flops_per_example(sequence_length)`."""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports

# Imported on first use (they need Keras: `lazy_exports`), so that a plugin
# can name them at import time without starting TensorFlow (`kdplug
# plugins`, `validate`).
if TYPE_CHECKING:
    from kdplug.models.attention_logits import MASKED_SCORE
    from kdplug.models.attention_logits import attention_logits
    from kdplug.models.attention_logits import mask_padded_keys
    from kdplug.models.bert_classifier import BertClassifier
    from kdplug.models.bert_classifier import TappedClassifier
    from kdplug.models.bert_classifier import embed_inputs
    from kdplug.models.bert_classifier import transformer_offers
    from kdplug.models.bilstm_classifier import BiLstmClassifier
    from kdplug.models.bilstm_encoder import BiLstmEncoder
    from kdplug.models.bilstm_siamese_classifier import BiLstmSiameseClassifier
    from kdplug.models.bottleneck_bert_classifier import BottleneckBertClassifier
    from kdplug.models.bottleneck_transformer_block import BottleneckTransformerBlock
    from kdplug.models.flops import dense_flops
    from kdplug.models.float32_copy import float32_copy
    from kdplug.models.hub_family import HubFamily
    from kdplug.models.hub_text_classifier import HubTextClassifier
    from kdplug.models.keyed_inputs import KeyedInputs
    from kdplug.models.nested_config import deserialize_nested
    from kdplug.models.saving import load_model
    from kdplug.models.sentence_pooling import pool_sequence
    from kdplug.models.tap_names import check_tap_names
    from kdplug.models.word_tokenizer import WordTokenizer

__getattr__, __dir__, __all__ = lazy_exports(__name__)
