import os

import keras
import numpy as np
import pytest

from kdplug import Distiller
from kdplug import testing
from kdplug.config import config_from_dict
from kdplug.config import load_config
from kdplug.data.masking import stage_dataset
from kdplug.errors import ConfigError
from kdplug.errors import KdplugError
from kdplug.mapping import Projection
from kdplug.plugin.manager import get_plugin_manager
from kdplug.terms import AttentionScoreMSE
from kdplug.terms import EmbeddingMSE
from kdplug.terms import ProjectedHiddenMSE
from kdplug.terms import SoftTargetCrossEntropy
from kdplug.training import FusedAdamW
from kdplug_plugins.students.narrow import NarrowStudent
from kdplug_plugins.tinybert.tinybert_method import TinyBertMethod

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def build(hidden_dim=8, **options):
    teacher = testing.tiny_bert_classifier(num_layers=4, hidden_dim=16, num_heads=2,
                                           seed=1)
    method = TinyBertMethod(TinyBertMethod.Config(**options))
    kind = NarrowStudent(NarrowStudent.Config(
        num_layers=2, hidden_dim=hidden_dim, intermediate_dim=16, num_heads=2,
        dropout=0.0))
    keras.utils.set_random_seed(3)
    student = method.build_student(teacher, kind, num_classes=2)
    return method, teacher, student


def fit(stage, student, teacher, epochs, learning_rate=1e-2):
    distiller = Distiller(student, teacher, stage.terms)
    distiller.compile(optimizer=FusedAdamW(learning_rate, weight_decay=0.0),
                      jit_compile=False)
    distiller.optimizer.build(distiller.trainable_variables)
    ds = stage_dataset(testing.toy_dataset(num_examples=16, batch_size=8), stage,
                       None, seed=0)
    history = distiller.fit(ds, epochs=epochs, verbose=0, shuffle=False).history
    return distiller, history


def test_registered_and_default_student():
    assert get_plugin_manager().methods.get("tinybert") is TinyBertMethod
    assert TinyBertMethod.default_student == {"kind": "narrow"}


def test_stages_terms_and_projections():
    method, teacher, student = build(temperature=2.0, attention_weight=0.5)
    assert method.layer_map(teacher, student) == [(2, 1), (4, 2)]
    general, intermediate, prediction = method.stages(teacher, student)
    assert [(s.name, s.data) for s in (general, intermediate, prediction)] == [
        ("general", "unlabelled"), ("task_intermediate", "task"),
        ("task_prediction", "task")]
    # the paper: general distillation from the pre-trained teacher
    assert [s.teacher for s in (general, intermediate, prediction)] == [
        "pretrained", "finetuned", "finetuned"]
    assert general.own_inputs and not intermediate.own_inputs
    # the task-intermediate stage continues with the general stage's terms
    # (and therefore the same projections W_e, W_h)
    assert general.terms is intermediate.terms
    embedding, hidden, attention = general.terms
    assert isinstance(embedding, EmbeddingMSE)
    assert isinstance(hidden, ProjectedHiddenMSE)
    assert isinstance(attention, AttentionScoreMSE)
    assert hidden.pairs == (("hidden/2", "hidden/1"), ("hidden/4", "hidden/2"))
    assert attention.pairs == (("attention_scores/2", "attention_scores/1"),
                               ("attention_scores/4", "attention_scores/2"))
    assert [float(t.weight.numpy()) for t in general.terms] == [1.0, 1.0, 0.5]
    # widths differ everywhere (16 vs 8): by default (the reference's one
    # fit_dense) a single projection serves the embeddings and every layer
    assert method.config.projection == "shared"
    shared = embedding.shared_projection
    assert isinstance(shared, Projection) and shared.name == "fit_dense"
    assert (shared.input_dim, shared.output_dim) == (8, 16)
    assert hidden.shared_projection is shared
    assert embedding.projections == {} and hidden.projections == {}
    assert len({id(w) for t in general.terms for w in t.trainable_weights}) == 2
    # projection: per_layer: one projection per feature pair (kdplug 0.1)
    method, teacher, student = build(projection="per_layer")
    embedding, hidden, _ = method.stages(teacher, student)[0].terms
    assert embedding.shared_projection is None and hidden.shared_projection is None
    assert list(embedding.projections) == ["embeddings"]
    assert list(hidden.projections) == ["hidden/1", "hidden/2"]
    for projection in [*embedding.projections.values(), *hidden.projections.values()]:
        assert isinstance(projection, Projection)
        assert (projection.input_dim, projection.output_dim) == (8, 16)
    (soft,) = prediction.terms
    assert isinstance(soft, SoftTargetCrossEntropy)
    assert float(soft.temperature.numpy()) == 2.0
    # a student of the teacher's width gets no projection at all
    method, teacher, wide = build(hidden_dim=16, stages=["task_intermediate"])
    (only,) = method.stages(teacher, wide)
    assert only.name == "task_intermediate"
    assert only.terms[0].projections == {} and only.terms[1].projections == {}
    assert only.terms[0].shared_projection is None
    # subset and epochs / learning rates per stage
    method, teacher, student = build(stages=["general", "task_prediction"],
                                     general_epochs=3, prediction_epochs=2,
                                     prediction_learning_rate=1e-3,
                                     embedding_weight=0.0)
    general, prediction = method.stages(teacher, student)
    assert (general.epochs, prediction.epochs) == (3, 2)
    assert (general.learning_rate, prediction.learning_rate) == (None, 1e-3)
    assert [t.name for t in general.terms] == ["hidden_mse", "attention_mse"]


# (Keras warns that the reloaded optimizer has more slots than the saved one:
# weights without a gradient in the saved stage; the optimizer is not compared.)
@pytest.mark.slow
@pytest.mark.filterwarnings("ignore:Skipping variable loading for optimizer")
def test_every_stage_trains_projections_stay_out_of_the_student(tmp_path):
    method, teacher, student = build()
    general, intermediate, prediction = method.stages(teacher, student)
    student_paths = [w.path for w in student.weights]
    assert not any("projection" in p for p in student_paths)
    projection_weights = list({id(w): w for t in general.terms
                               for w in t.trainable_weights}.values())
    assert len(projection_weights) == 2  # one shared fit_dense (kernel, bias)
    before = [w.numpy().copy() for w in projection_weights]

    _, history = fit(general, student, teacher, epochs=5)
    for name in ("loss", "embedding_mse", "hidden_mse", "attention_mse"):
        assert np.isfinite(history[name]).all(), name
    assert history["loss"][-1] < 0.9 * history["loss"][0]
    assert all(not np.allclose(b, w.numpy())
               for b, w in zip(before, projection_weights))

    distiller, history = fit(intermediate, student, teacher, epochs=3)
    assert history["loss"][-1] < history["loss"][0]
    trained = {id(w) for w in distiller.trainable_variables}
    assert all(id(w) in trained for w in projection_weights)
    assert [w.path for w in student.weights] == student_paths

    # the Distiller with the intermediate terms round-trips through .keras
    x, y = testing.toy_batch(8, seed=5)
    path = str(tmp_path / "tinybert.keras")
    distiller.save(path)
    loaded = keras.saving.load_model(path)
    assert isinstance(loaded, Distiller)
    assert [t.name for t in loaded.terms] == [
        "embedding_mse", "hidden_mse", "attention_mse"]
    # the shared projection is still one layer, with the trained weights
    assert loaded.terms[0].shared_projection is loaded.terms[1].shared_projection
    np.testing.assert_array_equal(
        loaded.terms[1].shared_projection.get_weights()[0],
        distiller.terms[1].shared_projection.get_weights()[0])
    np.testing.assert_allclose(loaded.predict(x, verbose=0),
                               distiller.predict(x, verbose=0), rtol=1e-5, atol=1e-6)
    _, original, _, _ = distiller.compute_terms(x, y, None, training=False)
    _, reloaded, _, _ = loaded.compute_terms(x, y, None, training=False)
    for a, b in zip(original, reloaded):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-6)
    assert all(float(np.asarray(v).mean()) > 0 for v in original)

    # A random tiny teacher is nearly uniform (soft CE ~ ln 2 whatever the
    # student does); give it confident logits so that the prediction stage
    # has something to learn.
    kernel, _ = teacher.classifier.get_weights()
    teacher.classifier.set_weights([kernel * 50.0, np.array([2.0, -2.0], "float32")])
    _, history = fit(prediction, student, teacher, epochs=4, learning_rate=1e-2)
    assert np.isfinite(history["soft_ce"]).all()
    assert history["soft_ce"][-1] < 0.9 * history["soft_ce"][0]


def test_shared_projection_loss_matches_numpy():
    # One W (kernel K, bias b) maps the student's embeddings and both mapped
    # layers: loss = w_e MSE(E_S W, E_T) + w_h sum_m MSE(H_S^m W, H_T^g(m)),
    # each MSE averaged over the teacher's units and the valid tokens.
    method, teacher, student = build(embedding_weight=2.0, hidden_weight=0.5,
                                     stages=["task_intermediate"])
    embedding, hidden, _ = method.stages(teacher, student)[0].terms
    rng = np.random.default_rng(0)
    kernel = rng.normal(size=(8, 16)).astype("float32")
    bias = rng.normal(size=(16,)).astype("float32")
    hidden.shared_projection.set_weights([kernel, bias])
    mask = np.array([[1, 1, 0], [1, 0, 0]], "int32")
    t = {k: rng.normal(size=(2, 3, 16)).astype("float32")
         for k in ("embeddings", "hidden/2", "hidden/4")}
    s = {k: rng.normal(size=(2, 3, 8)).astype("float32")
         for k in ("embeddings", "hidden/1", "hidden/2")}

    def mse(tt, ss):
        per_token = ((ss @ kernel + bias - tt) ** 2).mean(-1)
        return (per_token * mask).sum(-1) / mask.sum(-1)

    batch = {"padding_mask": mask}
    np.testing.assert_allclose(np.asarray(embedding(t, s, batch)),
                               mse(t["embeddings"], s["embeddings"]), rtol=1e-5)
    np.testing.assert_allclose(
        np.asarray(hidden(t, s, batch)),
        mse(t["hidden/2"], s["hidden/1"]) + mse(t["hidden/4"], s["hidden/2"]),
        rtol=1e-5)
    assert [float(x.weight.numpy()) for x in (embedding, hidden)] == [2.0, 0.5]


def test_shared_projection_needs_one_width_map():
    # a student whose embeddings (4) and hidden states (8) differ in width
    with pytest.raises(KdplugError, match="per_layer"):
        TinyBertMethod().shared_projection(
            _Widths({"embeddings": 16, "hidden/4": 16}),
            _Widths({"embeddings": 4, "hidden/2": 8}),
            [("embeddings", "embeddings"), ("hidden/4", "hidden/2")])
    # the term itself refuses a projection of the wrong shape
    with pytest.raises(KdplugError, match="per layer"):
        ProjectedHiddenMSE([("hidden/2", "hidden/1")], widths=[(16, 4)],
                           shared_projection=Projection(16, 8))


class _Widths:
    def __init__(self, widths):
        self.widths = widths

    def tap_width(self, tap):
        return self.widths[tap]


def test_config_validates():
    config = load_config(os.path.join(ROOT, "configs", "tinybert.yaml"))
    assert config.method.name == "tinybert"
    assert config.method_config.stages == [
        "general", "task_intermediate", "task_prediction"]
    assert config.student.name == "narrow"
    assert config.student_config.hidden_dim == 312
    # the paper's general stage: the pre-trained teacher on a general corpus
    assert config.method_config.general_teacher == "pretrained"
    corpus = os.path.join(ROOT, "data", "general_english.txt")
    assert config.method_config.general_corpus == "../data/general_english.txt"
    assert config.input_files == {"method.general_corpus": corpus}
    base = {"name": "x", "data": {"path": "d.tsv"}, "teacher": {"source": "t.keras"}}
    default = config_from_dict({**base, "method": {"name": "tinybert"}})
    assert default.student.name == "narrow"
    assert (default.method_config.general_corpus, default.input_files) == (None, {})
    with pytest.raises(ConfigError, match=r"method\.general_corpus: .*missing\.txt: "
                       r"no such file"):
        config_from_dict({**base, "method": {"name": "tinybert",
                                             "general_corpus": "missing.txt"}})
    for bad, match in (({"stages": ["pretrain"]}, r"stages\[0\]: must be one of 'general'"),
                       ({"stages": ["task_prediction", "general"]}, "order"),
                       ({"stages": []}, "at least one"),
                       ({"temperature": 0.0}, "temperature"),
                       ({"head_reduction": "max"}, "head_reduction")):
        with pytest.raises(ConfigError, match=match):
            config_from_dict({**base, "method": {"name": "tinybert", **bad}})
    method, teacher, student = build(mapping="nonexistent")
    with pytest.raises(KdplugError, match="nonexistent"):
        method.stages(teacher, student)


@pytest.mark.slow
def test_intermediate_stage_reads_cached_outputs_within_the_disk_budget(
        tmp_path, kdplug_log, monkeypatch):
    from kdplug.run.experiment import Experiment
    from kdplug.testing.toy_config import write_toy_config

    def run(folder, **cache):
        path = write_toy_config(
            tmp_path / folder,
            {"name": "tinybert", "stages": ["task_intermediate"]},
            num_examples=80, export=False, training={"epochs": 1},
            teacher={"finetune": None},  # any teacher has hidden states
            student={"kind": "truncated", "layers": [1]},
            cache={"teacher_outputs": True, **cache})
        return Experiment(load_config(path)).run()

    cached = run("cached")
    info = cached["teacher_output_cache"]
    assert info["computed"] == [0] and info["bytes"] > 0
    history = cached["history"]["task_intermediate"]
    assert np.isfinite(history["loss"]).all()
    # An entry over the budget is never written: the teacher runs online
    # (an empty cache: a complete entry would be used whatever its size).
    monkeypatch.setenv("KDPLUG_CACHE_DIR", str(tmp_path / "empty-cache"))
    online = run("online", disk_budget_gb=1e-6)
    info = online["teacher_output_cache"]
    assert info["online"] == "over disk budget" and info["bytes_needed"] > 1e-6 * 2**30
    assert any("over cache.disk_budget_gb" in m for m in kdplug_log())
    # Same data, same order of magnitude of loss: float16 storage only rounds.
    np.testing.assert_allclose(online["history"]["task_intermediate"]["loss"],
                               history["loss"], rtol=0.25)
