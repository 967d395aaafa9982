"""Fuzzing: bad config documents and data rows only ever raise kdplug errors."""

import pytest
import yaml
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from kdplug import KdplugError
from kdplug.cli import main
from kdplug.config import DataConfig
from kdplug.config import config_from_dict
from kdplug.data import read_splits

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=True),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.text(max_size=6), children, max_size=3),
    ),
    max_leaves=6,
)
VALID = {
    "name": "fuzz",
    "data": {"path": "d.tsv", "sequence_length": 32},
    "teacher": {"source": "teacher_dir"},
    "method": {"name": "kd", "alpha": 0.5},
    "student": {"kind": "truncated", "layers": [0]},
    "training": {"epochs": 1},
    "augment": [{"name": "mask", "n": 2}],
    "cache": True,
}
SECTIONS = sorted(VALID)
KEYS = ["name", "kind", "path", "epochs", "alpha", "layers", "n", "p_mask",
        "sequence_length", "temperature", "batch_size", "bad_rows", "dtype"]


@st.composite
def mutated_configs(draw):
    doc = yaml.safe_load(yaml.safe_dump(VALID))
    for _ in range(draw(st.integers(1, 3))):
        section = draw(st.sampled_from(SECTIONS))
        action = draw(st.sampled_from(["replace", "set", "delete"]))
        if action == "delete":
            doc.pop(section, None)
        elif action == "replace" or not isinstance(doc.get(section), dict):
            doc[section] = draw(values)
        else:
            doc[section][draw(st.sampled_from(KEYS))] = draw(values)
    return doc


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_config_validation_never_crashes(doc):
    try:
        config_from_dict(doc, file="fuzz.yaml")
    except KdplugError:
        pass


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow,
                                 HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=200))
def test_cli_validate_never_prints_a_traceback(tmp_path, capsys, raw):
    path = tmp_path / "c.yaml"
    path.write_bytes(raw)
    code = main(["validate", str(path)])
    err = capsys.readouterr().err
    assert code in (0, 2)
    assert "Traceback" not in err


# Lone surrogates (category Cs) cannot be written to a UTF-8 file at all.
cell = st.text(alphabet=st.characters(blacklist_characters="\t\n\r",
                                      blacklist_categories=("Cs",)), max_size=6)


@pytest.mark.slow
@settings(max_examples=80, deadline=None,
          suppress_health_check=[HealthCheck.too_slow,
                                 HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["train", "dev", "test", "x"]),
                          st.one_of(cell, st.sampled_from(["0", "1", "2", "-1"])),
                          cell),
                min_size=0, max_size=8),
       st.sampled_from(["error", "skip"]))
def test_data_rows_never_crash_the_reader(tmp_path, rows, bad_rows):
    path = tmp_path / "d.tsv"
    lines = ["split\tlabel\ttext"] + ["\t".join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    try:
        splits = read_splits(DataConfig(path=str(path), bad_rows=bad_rows))
    except KdplugError:
        return
    for examples in splits.values():
        assert len(examples) > 0
        assert all(t.strip() for t in examples.texts)
        assert set(examples.labels.tolist()) <= {0, 1}
