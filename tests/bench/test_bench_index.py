"""bench/README.md, the index of which script writes which section of which
doc page from which results file: complete, true, and the sections it
names generated (no hand-pasted tables)."""

import glob
import json
import os
import re

import pytest
from conftest import BENCH
from conftest import ROOT
from conftest import load_bench_script

MARKER = re.compile(r"<!-- ([a-z0-9_-]+):start -->")
LIBRARIES = {"verdicts.py", "build_task_data.py", "build_qa_data.py"}  # write no section
# benchlib's helpers that add `--write-docs` to a script's options
FLAG_HELPERS = ("add_write_docs_argument", "add_single_run_arguments",
                "add_measurement_arguments")


def index_rows():
    """`[(script, page, section, results file or None)]` of the index."""
    with open(os.path.join(BENCH, "README.md"), encoding="utf-8") as f:
        text = f.read()
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[0].startswith("`") and cells[0].endswith(".py`"):
            code = [re.findall(r"`([^`]+)`", c) for c in cells[:4]]
            rows.append((code[0][0], code[1][0], code[2][0],
                         code[3][0] if code[3] else None))
    return rows


def source(script):
    with open(os.path.join(BENCH, script), encoding="utf-8") as f:
        return f.read()


def section(page, name):
    """The text between `name`'s markers in `page` (relative to the root)."""
    with open(os.path.join(ROOT, page), encoding="utf-8") as f:
        text = f.read()
    start, end = f"<!-- {name}:start -->\n", f"\n<!-- {name}:end -->"
    assert text.count(start) == 1 and text.count(end) == 1, (page, name)
    return text[text.index(start) + len(start):text.index(end)]


def test_the_index_names_every_section_of_every_doc_page_and_every_script():
    rows = index_rows()
    listed = {(page, name) for _, page, name, _ in rows}
    assert len(listed) == len(rows), "a section is listed twice"
    found = set()
    for page in glob.glob(os.path.join(ROOT, "docs", "*.md")) + [os.path.join(ROOT, "README.md")]:
        with open(page, encoding="utf-8") as f:
            names = set(MARKER.findall(f.read())) - {"name"}  # results.md's intro
        found |= {(os.path.relpath(page, ROOT), n) for n in names}
    assert found == listed
    scripts = {os.path.basename(p) for p in glob.glob(os.path.join(BENCH, "*.py"))}
    assert scripts == {script for script, *_ in rows} | LIBRARIES


@pytest.mark.parametrize("script, page, name, results", index_rows())
def test_each_script_writes_its_section_with_the_one_flag(script, page, name, results):
    text = source(script)
    assert f'"{name}"' in text, f"{script} does not name its section {name!r}"
    assert any(helper in text for helper in FLAG_HELPERS), script
    for old in ('"--out"', '"--write"', '"--doc"', '"--docs"'):
        assert f"add_argument({old}" not in text, f"{script} spells the flag {old}"
    section(page, name)  # balanced markers, once
    if results:
        assert os.path.isfile(os.path.join(ROOT, results)), results
        assert os.path.basename(results) in text


@pytest.mark.parametrize("script", ["byom", "seq2seq_buckets"])
def test_a_measured_once_section_is_its_results_file_rendered(script):
    """The page holds exactly what `--render-only` writes from the stored
    results (a campaign's section is not checked here: while it runs, its
    results file is saved just before its section is rewritten)."""
    bench = load_bench_script(script)
    row = next(r for r in index_rows() if r[0] == f"{script}.py")
    with open(os.path.join(ROOT, row[3]), encoding="utf-8") as f:
        stored = json.load(f)
    assert bench.render(stored).rstrip() == section(row[1], row[2])
