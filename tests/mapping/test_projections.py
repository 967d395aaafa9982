import keras
import numpy as np
import pytest
from keras import ops

from kdplug import Distiller
from kdplug import mapping
from kdplug import testing
from kdplug.errors import KdplugError
from kdplug.models import BiLstmClassifier
from kdplug.terms import Term


@pytest.fixture(scope="module")
def teacher():
    return testing.tiny_bert_classifier(num_layers=4, seed=11)  # H=16, 2 heads


@pytest.fixture(scope="module")
def narrow():
    return testing.tiny_bert_classifier(num_layers=2, hidden_dim=8, num_heads=2,
                                        intermediate_dim=12, seed=12)


def test_projection_layer_and_config():
    proj = mapping.Projection(output_dim=6, input_dim=4, name="p")
    assert proj.built and [tuple(w.shape) for w in proj.weights] == [(4, 6), (6,)]
    x = np.arange(2 * 3 * 4, dtype="float32").reshape(2, 3, 4)
    kernel, bias = proj.get_weights()
    np.testing.assert_allclose(np.asarray(proj(x)), x @ kernel + bias, atol=1e-5)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(proj))
    assert isinstance(again, mapping.Projection)
    assert (again.output_dim, again.input_dim, again.use_bias) == (6, 4, True)
    assert mapping.Projection(3, 2, use_bias=False).count_params() == 6


def test_projections_exactly_where_widths_differ(teacher, narrow):
    pairs = mapping.UniformMapping().tap_pairs(teacher, narrow, ("hidden", "attention"))
    pairs += [("logits", "logits"), ("cls/4", "cls/2"), ("embeddings", "embeddings")]
    projections = mapping.build_projections(teacher, narrow, pairs)
    widths = [None if p is None else (p.input_dim, p.output_dim) for p in projections]
    assert widths == [(8, 16), None, (8, 16), None, None, (8, 16), (8, 16)]
    assert projections[0].name == "projection_hidden_1"
    same = testing.tiny_bert_classifier(num_layers=2, seed=13)
    assert mapping.build_projections(teacher, same, [("hidden/4", "hidden/2")]) == [None]


def test_head_count_mismatch_needs_a_declared_reduction(teacher):
    four_heads = testing.tiny_bert_classifier(num_layers=2, num_heads=4, seed=14)
    pairs = [("attention/4", "attention/2")]
    with pytest.raises(KdplugError) as err:
        mapping.build_projections(teacher, four_heads, pairs)
    text = str(err.value)
    assert "teacher with 2 heads and a student with 4 heads" in text
    assert "'mean'" in text and "'group'" in text
    assert mapping.build_projections(teacher, four_heads, pairs, head_reduction="group") == [None]
    with pytest.raises(KdplugError, match="unknown head_reduction"):
        mapping.build_projections(teacher, four_heads, pairs, head_reduction="max")
    with pytest.raises(KdplugError, match="attention maps pair with attention maps"):
        mapping.build_projections(teacher, four_heads, [("attention/4", "attention_scores/2")],
                                  head_reduction="mean")
    with pytest.raises(KdplugError, match="features with features"):
        mapping.build_projections(teacher, four_heads, [("attention/4", "hidden/2")])


def test_reduce_heads_numbers():
    att = np.arange(2 * 6 * 2 * 2, dtype="float32").reshape(2, 6, 2, 2)
    grouped = np.asarray(mapping.reduce_heads(att, 3, "group"))
    np.testing.assert_allclose(grouped, att.reshape(2, 3, 2, 2, 2).mean(2))
    np.testing.assert_allclose(np.asarray(mapping.reduce_heads(att, 1, "mean")),
                               att.mean(1, keepdims=True))
    with pytest.raises(KdplugError, match="equal groups"):
        mapping.reduce_heads(att, 4, "group")


def test_bilstm_asked_for_attention(teacher):
    bilstm = BiLstmClassifier(testing.VOCAB_SIZE, 2, embedding_dim=4, lstm_units=3,
                              hidden_dim=4)
    with pytest.raises(KdplugError, match="student tap 'attention/1'.*has no attention"):
        mapping.build_projections(teacher, bilstm, [("attention/2", "attention/1")])
    with pytest.raises(KdplugError, match="student tap 'hidden/1'.*offers: pooled, logits"):
        mapping.build_projections(teacher, bilstm, [("hidden/2", "hidden/1")])
    [proj] = mapping.build_projections(teacher, bilstm, [("pooled", "pooled")])
    assert (proj.input_dim, proj.output_dim) == (6, 16)


class _ProjectedHiddenMSE(Term):
    """A test term holding its projections, as real layer-wise terms should."""

    def __init__(self, pairs, projections, **kwargs):
        super().__init__(name="projected_hidden_mse", **kwargs)
        self.pairs = pairs
        self.projections = [p for p in projections]

    def required_teacher_taps(self):
        return {t for t, _ in self.pairs}

    def required_student_taps(self):
        return {s for _, s in self.pairs}

    def call(self, teacher, student, batch):
        losses = []
        for (t, s), proj in zip(self.pairs, self.projections):
            losses.append(ops.mean(ops.square(proj(student[s]) - teacher[t]), axis=(1, 2)))
        return sum(losses)


def test_projections_train_inside_terms_and_stay_out_of_the_student(teacher, narrow, tmp_path):
    pairs = mapping.UniformMapping().tap_pairs(teacher, narrow)
    projections = mapping.build_projections(teacher, narrow, pairs)
    term = _ProjectedHiddenMSE(pairs, projections)
    distiller = Distiller(narrow, teacher, [term])
    distiller.compile(optimizer=keras.optimizers.SGD(0.1), run_eagerly=True)
    before = [p.get_weights()[0].copy() for p in projections]
    trainable = {id(v) for v in distiller.trainable_variables}
    assert all(id(w) in trainable for p in projections for w in p.weights)
    student_ids = {id(w) for w in narrow.weights}
    assert not any(id(w) in student_ids for p in projections for w in p.weights)
    x, y = testing.toy_batch(batch_size=8)
    distiller.train_on_batch(x, y)
    for p, w in zip(projections, before):
        assert np.abs(p.get_weights()[0] - w).max() > 0
    path = str(tmp_path / "student.keras")
    narrow.save(path)
    exported = keras.saving.load_model(path)
    assert exported.count_params() == narrow.count_params()
    assert not [w.path for w in exported.weights if "projection" in w.path]
