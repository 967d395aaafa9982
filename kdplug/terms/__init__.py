"""Loss terms shared by method plugins (one class per module)."""

from kdplug._lazy import lazy_exports

# Imported on first use (they need Keras), so that a plugin can name them
# at import time without starting TensorFlow (`kdplug plugins`, `validate`).
__getattr__, __dir__ = lazy_exports(__name__, {
    "AttentionScoreMSE": "kdplug.terms.attention_score_mse",
    "AttentionTransfer": "kdplug.terms.attention_transfer",
    "CosineHidden": "kdplug.terms.cosine_hidden",
    "EmbeddingMSE": "kdplug.terms.embedding_mse",
    "FeatureMapTransfer": "kdplug.terms.feature_map_transfer",
    "FeatureStatisticsTransfer": "kdplug.terms.feature_statistics_transfer",
    "HardLabelBinaryCrossEntropy": "kdplug.terms.hard_label_binary_cross_entropy",
    "HardLabelCrossEntropy": "kdplug.terms.hard_label_cross_entropy",
    "HardLabelMSE": "kdplug.terms.hard_label_mse",
    "LogitMSE": "kdplug.terms.logit_mse",
    "MaskedLMLoss": "kdplug.terms.masked_lm_loss",
    "NormalizedClsMSE": "kdplug.terms.normalized_cls_mse",
    "PairedTerm": "kdplug.terms.paired_term",
    "ProjectedHiddenMSE": "kdplug.terms.projected_hidden_mse",
    "SoftTargetBinaryCrossEntropy": "kdplug.terms.soft_target_binary_cross_entropy",
    "SoftTargetCrossEntropy": "kdplug.terms.soft_target_cross_entropy",
    "Term": "kdplug.terms.term",
    "TokenHardCrossEntropy": "kdplug.terms.token_hard_cross_entropy",
    "TokenSoftCrossEntropy": "kdplug.terms.token_soft_cross_entropy",
    "label_mask": "kdplug.terms.term",
})
