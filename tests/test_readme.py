"""The README's Python example runs as written (issue #16), on a tiny
keras-hub classifier preset and toy data in place of the user's teacher and
the bundled reviews."""

import pathlib
import re

import keras_hub
import numpy as np

from kdplug.data import TextEncoder
from kdplug.testing import families
from kdplug.testing import toy_sentences
from kdplug.testing import write_toy_tsv

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_example():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Using it from Python"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    code = readme_example()
    teacher = families.write_tiny_preset("bert", tmp_path / "teacher", num_layers=3,
                                         classifier=True)
    (tmp_path / "data").mkdir()
    write_toy_tsv(tmp_path / "data" / "movie_snippets.tsv", num_examples=64)
    # the tiny teacher's positions stop at 32
    code = code.replace('"my-fine-tuned-classifier"', repr(str(teacher)))
    assert code.count("sequence_length=48") == 2
    code = code.replace("sequence_length=48", "sequence_length=16")
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
    student = namespace["student"]
    assert student.num_layers == 2 and student.family.name == "bert"
    shipped = keras_hub.models.TextClassifier.from_preset(str(tmp_path / "my-student"))
    texts = toy_sentences(4, seed=9)[0]
    expected = student(TextEncoder(shipped.preprocessor.tokenizer, 16)(texts))
    np.testing.assert_allclose(shipped(shipped.preprocessor(texts)), expected, atol=1e-5)
