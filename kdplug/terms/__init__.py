"""Loss terms shared by method plugins (one class per module)."""

from typing import TYPE_CHECKING

from kdplug._lazy import lazy_exports

# Imported on first use (they need Keras: `lazy_exports`), so that a plugin
# can name them at import time without starting TensorFlow (`kdplug
# plugins`, `validate`).
if TYPE_CHECKING:
    from kdplug.terms.attention_score_mse import AttentionScoreMSE
    from kdplug.terms.attention_transfer import AttentionTransfer
    from kdplug.terms.cosine_hidden import CosineHidden
    from kdplug.terms.embedding_mse import EmbeddingMSE
    from kdplug.terms.feature_map_transfer import FeatureMapTransfer
    from kdplug.terms.feature_statistics_transfer import FeatureStatisticsTransfer
    from kdplug.terms.hard_label_binary_cross_entropy import HardLabelBinaryCrossEntropy
    from kdplug.terms.hard_label_cross_entropy import HardLabelCrossEntropy
    from kdplug.terms.hard_label_mse import HardLabelMSE
    from kdplug.terms.logit_mse import LogitMSE
    from kdplug.terms.masked_lm_loss import MaskedLMLoss
    from kdplug.terms.normalized_cls_mse import NormalizedClsMSE
    from kdplug.terms.paired_term import PairedTerm
    from kdplug.terms.projected_hidden_mse import ProjectedHiddenMSE
    from kdplug.terms.soft_target_binary_cross_entropy import SoftTargetBinaryCrossEntropy
    from kdplug.terms.soft_target_cross_entropy import SoftTargetCrossEntropy
    from kdplug.terms.span_hard_cross_entropy import SpanHardCrossEntropy
    from kdplug.terms.span_soft_cross_entropy import SpanSoftCrossEntropy
    from kdplug.terms.term import Term
    from kdplug.terms.term import label_mask
    from kdplug.terms.token_hard_cross_entropy import TokenHardCrossEntropy
    from kdplug.terms.token_soft_cross_entropy import TokenSoftCrossEntropy

__getattr__, __dir__, __all__ = lazy_exports(__name__)
