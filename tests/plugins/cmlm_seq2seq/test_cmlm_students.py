import keras
import numpy as np
import pytest

import kdplug
from kdplug.config.schema import parse
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.plugin.manager import get_plugin_manager

KINDS = {
    "seq2seq-transformer": {"hidden_dim": 8, "num_encoder_layers": 1,
                            "num_decoder_layers": 2, "num_heads": 2,
                            "intermediate_dim": 16, "dropout": 0.0},
    "seq2seq-gru": {"embedding_dim": 6, "units": 8, "dropout": 0.0},
}


def build(kind, vocabulary_size=27, source=5, target=4):
    cls = get_plugin_manager().students.get(kind)
    return cls(parse(cls.Config, KINDS[kind], "student")).build_seq2seq(
        vocabulary_size, source, target)


def batch(rng, n=3, source=5, target=4, vocabulary_size=27):
    src = rng.integers(5, vocabulary_size, (n, source)).astype("int32")
    src[:, 3:] = 0
    dec = rng.integers(5, vocabulary_size, (n, target + 1)).astype("int32")
    dec[:, 0], dec[0, 3:] = 2, 0
    return {"encoder_token_ids": src, "encoder_padding_mask": (src > 0).astype("int32"),
            "decoder_token_ids": dec, "decoder_padding_mask": (dec > 0).astype("int32"),
            "teacher/topk_ids": np.zeros((n, target + 1, 2), "int32")}


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_logits_are_causal_and_the_keras_file_round_trips(kind, tmp_path):
    keras.utils.set_random_seed(0)
    model = build(kind)
    x = batch(np.random.default_rng(0))
    logits = np.asarray(model.taps(x, ["logits"])["logits"])
    assert logits.shape == (3, 5, 27)
    assert model.trainable_weights and len(model.trainable_weights) == len(model.weights)
    later = dict(x, decoder_token_ids=x["decoder_token_ids"].copy())
    later["decoder_token_ids"][:, 3] = 7  # only positions >= 3 may change
    changed = np.asarray(model(later))
    np.testing.assert_allclose(changed[:, :3], logits[:, :3], atol=1e-5)
    assert np.abs(changed[1:, 3:] - logits[1:, 3:]).max() > 0
    path = str(tmp_path / "student.keras")
    model.save(path)
    clone = kdplug.load_model(path)
    assert type(clone) is type(model) and clone.max_target_length == 4
    np.testing.assert_allclose(np.asarray(clone(x)), logits, atol=1e-5)
    with pytest.raises(KdplugError, match="no tap"):
        model.taps(x, ["pooled"])


def test_seq2seq_kinds_refuse_to_build_a_classifier():
    cls = get_plugin_manager().students.get("seq2seq-transformer")
    kind = cls(parse(cls.Config, {}, "student"))
    with pytest.raises(ConfigError, match="only method cmlm-seq2seq"):
        kind.build(None, 2)
    with pytest.raises(ConfigError, match="multiple of num_heads"):
        parse(cls.Config, {"hidden_dim": 10, "num_heads": 4}, "student")
    assert cls.table_variants == ()
