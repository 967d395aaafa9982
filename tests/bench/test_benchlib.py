"""bench/benchlib.py: the marked sections of docs/results.md, the machine line."""

import pytest
from conftest import load_bench_script

benchlib = load_bench_script("benchlib")


def test_write_marked_section_creates_replaces_and_keeps_other_text(tmp_path):
    start, end = benchlib.markers("fastbert")
    assert (start, end) == ("<!-- fastbert:start -->", "<!-- fastbert:end -->")
    path = tmp_path / "docs" / "results.md"
    benchlib.write_marked_section(str(path), "fastbert", "first\n")
    assert path.read_text() == f"{benchlib.TITLE}\n{start}\nfirst\n{end}\n"
    path.write_text(path.read_text() + "\nA later section.\n")
    benchlib.write_marked_section(str(path), "fastbert", "second")
    text = path.read_text()
    assert text.count(start) == 1 and "first" not in text
    assert text.endswith(f"{start}\nsecond\n{end}\n\nA later section.\n")
    # another script's section goes after, this one stays where it is
    benchlib.write_marked_section(str(path), "mtdnn", "other", title="ignored")
    assert path.read_text().startswith(benchlib.TITLE) and text in path.read_text()
    path.write_text(f"x\n{start}\nno end\n")
    with pytest.raises(SystemExit, match="unbalanced"):
        benchlib.write_marked_section(str(path), "fastbert", "third")
    assert path.read_text() == f"x\n{start}\nno end\n"
    assert list(tmp_path.glob("docs/.results-*")) == []  # no temporary left


def test_machine_description():
    assert benchlib.usable_cpus() >= 1
    assert benchlib.cpu_model()
