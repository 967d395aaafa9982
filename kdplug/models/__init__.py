"""kdplug's models: every one offers `taps(inputs, names, training)`,
`available_taps()`, `tap_width(name)`, `count_params()` and
`flops_per_example(sequence_length)`."""

from kdplug._lazy import lazy_exports

# Imported on first use (they need Keras), so that a plugin can name them
# at import time without starting TensorFlow (`kdplug plugins`, `validate`).
__getattr__, __dir__ = lazy_exports(__name__, {
    "MASKED_SCORE": "kdplug.models.attention_logits",
    "attention_logits": "kdplug.models.attention_logits",
    "BertClassifier": "kdplug.models.bert_classifier",
    "BiLstmClassifier": "kdplug.models.bilstm_classifier",
    "BiLstmEncoder": "kdplug.models.bilstm_encoder",
    "BiLstmSiameseClassifier": "kdplug.models.bilstm_siamese_classifier",
    "BottleneckBertClassifier": "kdplug.models.bottleneck_bert_classifier",
    "BottleneckTransformerBlock": "kdplug.models.bottleneck_transformer_block",
    "HubTextClassifier": "kdplug.models.hub_text_classifier",
    "HubFamily": "kdplug.models.hub_family",
    "KeyedInputs": "kdplug.models.keyed_inputs",
    "WordTokenizer": "kdplug.models.word_tokenizer",
})
