from kdplug import testing
from kdplug.evaluation import model_table
from kdplug.models import flops


def test_rows_for_teacher_and_students():
    teacher = testing.tiny_bert_classifier(num_layers=2, seed=15)
    variants = [
        ("truncated", {"layers": "first_k", "num_layers": 1}),
        ("narrow", {"num_layers": 1, "hidden_dim": 8, "intermediate_dim": 8,
                    "num_heads": 2}),
        ("bottleneck", {"preset": "tiny", "intra_dim": 8, "num_heads": 2,
                        "intermediate_dim": 8, "embedding_dim": 4}),
        ("bilstm", {"embedding_dim": 4, "lstm_units": 3, "hidden_dim": 4}),
        ("bilstm-siamese", {"embedding_dim": 4, "lstm_units": 3, "hidden_dim": 4}),
    ]
    rows = model_table.build_rows(12, 2, teacher=teacher, variants=variants)
    assert [r["model"] for r in rows[1:]] == [v[0] for v in variants]
    assert rows[0]["params"] == teacher.count_params()
    assert rows[0]["flops"] == teacher.flops_per_example(12)
    for r in rows[1:]:
        assert r["trainable"] == r["params"] > 0  # built from a frozen teacher
        assert 0 < r["params_ratio"] and 0 < r["flops_ratio"] < 1
    truncated = rows[1]
    # one of two layers: the teacher minus its (full) lower layer
    full_layer = flops.transformer_layer_flops(12, 16, 32)
    assert truncated["flops"] == teacher.flops_per_example(12) - full_layer
    table = model_table.markdown_table(rows, 12)
    assert "| bilstm-siamese |" in table and "`BiLstmSiameseClassifier`" in table
    assert "all of its parameters trainable." in table


def test_write_table_replaces_only_the_marked_block(tmp_path):
    path = tmp_path / "models.md"
    model_table.write_table(str(path), "first table")
    text = path.read_text()
    assert text.startswith("# Models") and "first table" in text
    path.write_text(text.replace("# Models", "# Models\n\nhand-written intro") + "\noutro\n")
    model_table.write_table(str(path), "second table")
    text = path.read_text()
    assert "hand-written intro" in text and text.rstrip().endswith("outro")
    assert "second table" in text and "first table" not in text
    assert text.count(model_table.START) == 1
