"""kdplug's models: every one offers `taps(inputs, names, training)`,
`available_taps()`, `tap_width(name)`, `count_params()` and
`flops_per_example(sequence_length)`."""

from kdplug.models.attention_logits import MASKED_SCORE
from kdplug.models.attention_logits import attention_logits
from kdplug.models.bert_classifier import BertClassifier
from kdplug.models.bilstm_classifier import BiLstmClassifier
from kdplug.models.bilstm_encoder import BiLstmEncoder
from kdplug.models.bilstm_siamese_classifier import BiLstmSiameseClassifier
from kdplug.models.bottleneck_bert_classifier import BottleneckBertClassifier
from kdplug.models.bottleneck_transformer_block import BottleneckTransformerBlock
from kdplug.models.word_tokenizer import WordTokenizer
