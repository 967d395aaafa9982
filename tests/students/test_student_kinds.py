import dataclasses

import keras
import numpy as np
import pytest

import kdplug
from kdplug import testing
from kdplug.config.schema import parse
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.models import BertClassifier
from kdplug.models import BiLstmClassifier
from kdplug.models import BiLstmSiameseClassifier
from kdplug.models import BottleneckBertClassifier
from kdplug.plugin.manager import PluginManager

KINDS = ["bilstm", "bilstm-siamese", "bottleneck", "hub", "narrow", "truncated"]


@pytest.fixture(scope="module")
def pm():
    return PluginManager()


@pytest.fixture(scope="module")
def teacher():
    model = testing.tiny_bert_classifier(num_layers=2, seed=8)
    model.trainable = False
    return model


def build(pm, kind, teacher, num_classes=2, **options):
    cls = pm.students.get(kind)
    return cls(parse(cls.Config, options, "student")).build(teacher, num_classes)


def n_params(weights):
    return sum(int(np.prod(w.shape)) for w in weights)


def bert_params(V, P, H, I, L, C, segments=2):
    layer = 4 * (H * H + H) + 2 * 2 * H + (H * I + I) + (I * H + H)
    return V * H + P * H + segments * H + 2 * H + L * layer + (H * H + H) + (H * C + C)


def test_builtin_kinds_are_registered_with_dataclass_configs(pm):
    assert set(KINDS) <= set(pm.students.names())
    for kind in KINDS:
        cls = pm.students.get(kind)
        assert issubclass(cls, kdplug.StudentKind) and cls.name == kind
        assert dataclasses.is_dataclass(cls.Config) and cls.description
        assert pm.students.source(kind) == "kdplug"


@pytest.mark.parametrize("kind,options,cls,expected", [
    ("narrow", {"num_layers": 2, "hidden_dim": 12, "intermediate_dim": 20,
                "num_heads": 3},
     BertClassifier, bert_params(64, 32, 12, 20, 2, 2)),
    ("bilstm", {"embedding_dim": 4, "lstm_units": 3, "hidden_dim": 5},
     BiLstmClassifier, 64 * 4 + 2 * 4 * (4 + 3 + 1) * 3 + (6 * 5 + 5) + (5 * 2 + 2)),
    ("bilstm-siamese", {"embedding_dim": 4, "lstm_units": 3, "hidden_dim": 5},
     BiLstmSiameseClassifier,
     64 * 4 + 2 * 4 * (4 + 3 + 1) * 3 + (24 * 5 + 5) + (5 * 2 + 2)),
])
def test_students_of_a_frozen_teacher_train_every_weight(pm, teacher, kind, options,
                                                         cls, expected):
    student = build(pm, kind, teacher, **options)
    assert type(student) is cls
    assert not student.non_trainable_weights
    assert len(student.trainable_weights) == len(student.weights)
    assert n_params(student.trainable_weights) == expected == student.count_params()
    assert not teacher.trainable_weights  # the teacher was not unfrozen
    assert student.flops_per_example(12) > 0


def test_narrow_defaults_are_tinybert4(pm, teacher):
    cfg = parse(pm.students.get("narrow").Config, {}, "student")
    assert (cfg.num_layers, cfg.hidden_dim, cfg.intermediate_dim, cfg.num_heads) == (
        4, 312, 1200, 12)
    with pytest.raises(ConfigError, match="divisible by num_heads"):
        parse(pm.students.get("narrow").Config, {"hidden_dim": 10, "num_heads": 3},
              "student")


def test_narrow_round_trip(pm, teacher, tmp_path):
    student = build(pm, "narrow", teacher, num_layers=2, hidden_dim=8,
                    intermediate_dim=12, num_heads=2)
    x, _ = testing.toy_batch(batch_size=3)
    taps = student.taps(x, ["hidden/2", "attention_scores/1", "logits"])
    assert taps["hidden/2"].shape[-1] == 8 and student.tap_width("hidden/1") == 8
    assert student.backbone.vocabulary_size == teacher.backbone.vocabulary_size
    path = str(tmp_path / "narrow.keras")
    student.save(path)
    loaded = keras.saving.load_model(path)
    np.testing.assert_allclose(np.asarray(loaded(x)), np.asarray(taps["logits"]),
                               atol=1e-6)
    assert not loaded.non_trainable_weights


def test_bottleneck_matches_teacher_width_and_depth(pm, teacher):
    student = build(pm, "bottleneck", teacher, preset="tiny", intra_dim=8,
                    num_heads=2, intermediate_dim=12, embedding_dim=4)
    assert isinstance(student, BottleneckBertClassifier)
    assert student.num_layers == teacher.num_layers == 2
    assert student.tap_width("hidden/2") == teacher.tap_width("hidden/2") == 16
    assert student.num_feedforward == 2  # from the tiny preset
    assert not student.non_trainable_weights
    assert n_params(student.trainable_weights) == student.count_params()
    default = build(pm, "bottleneck", teacher, num_layers=1)
    assert (default.intra_dim, default.num_feedforward, default.num_layers) == (128, 4, 1)
    with pytest.raises(KdplugError, match="divisible"):
        build(pm, "bottleneck", teacher, intra_dim=10, num_heads=4)


def test_bilstm_word_ids_needs_vocabulary_size(pm, teacher):
    with pytest.raises(KdplugError, match="vocabulary_size is required"):
        build(pm, "bilstm", teacher, input="word_ids")
    student = build(pm, "bilstm-siamese", teacher, input="word_ids",
                    vocabulary_size=11, embedding_dim=4, lstm_units=3)
    assert student.encoder.vocabulary_size == 11
    assert student.input_keys == ("word_ids", "word_padding_mask",
                                  "word_ids_b", "word_padding_mask_b")
    with pytest.raises(ConfigError, match="must be one of"):
        parse(pm.students.get("bilstm").Config, {"input": "chars"}, "student")


@pytest.mark.slow
def test_hub_student_loads_its_own_model_and_tokenizer(pm, teacher, tmp_path):
    """`student.kind: hub` (cross-tokenizer pairs, tests/run/
    test_cross_tokenizer.py): a Hugging Face RoBERTa folder becomes a
    trainable student reading `student/` inputs, its fine-tuned head kept;
    a keras-hub backbone preset gets a new head."""
    from kdplug.models import HubTextClassifier
    from kdplug.models import KeyedInputs
    from kdplug.testing import families

    folder = families.write_tiny_hf_folder("roberta", tmp_path / "hf", classifier=True)
    cls = pm.students.get("hub")
    kind = cls(parse(cls.Config, {"source": folder}, "student"))
    student = kind.build(teacher, 2)
    assert isinstance(student, KeyedInputs) and isinstance(student.model, HubTextClassifier)
    assert type(kind.tokenizer).__name__ == "RobertaTokenizer"
    assert student.input_keys[0] == "student/token_ids"
    np.testing.assert_allclose(student.model.classifier.get_weights()[1], [5.0, -5.0])
    assert not student.non_trainable_weights and not teacher.trainable_weights
    with pytest.raises(ConfigError, match=r"student\.source: .* 2 outputs .* needs 3"):
        kind.build(teacher, 3)
    preset = families.write_tiny_preset("albert", tmp_path / "albert")
    new_head = cls(parse(cls.Config, {"source": preset, "dropout": 0.2}, "student"))
    model = new_head.build(teacher, 3).model
    assert model.num_classes == 3 and model.dropout == 0.2
    with pytest.raises(ConfigError, match="source"):
        parse(cls.Config, {}, "student")  # required
