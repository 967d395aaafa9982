"""Every number in docs/results.md, docs/performance.md and the README's
results block has a stored source (issue #48).

Two checks:

1. Each generated section (between `<!-- name:start -->` / `<!-- name:end -->`)
   is exactly what its bench script's `--render-only` writes from its
   results file (`bench/results/<name>.json`): a section edited by hand, or
   one whose results file was not committed with it, fails here.
2. The text outside the sections (written by hand) quotes only numbers a
   generated section shows, as it shows them: a measurement (a number with
   a decimal point, a percentage, or one of four or more digits, like
   "1,060" or "93k") that no section shows has no stored source, and one
   rounded differently has drifted from it. Dates, code spans, links and
   small whole numbers (settings and counts: "3 layers", "T=5") are not
   measurements.
"""

import os
import re
import shutil

import pytest
from conftest import load_bench_script

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS_PAGE = os.path.join(ROOT, "docs", "results.md")
PERFORMANCE_PAGE = os.path.join(ROOT, "docs", "performance.md")
README = os.path.join(ROOT, "README.md")
PAGES = (RESULTS_PAGE, PERFORMANCE_PAGE, README)
# Each page's sections and the bench script that renders each one.
SECTION_SCRIPTS = {
    RESULTS_PAGE: {name: name for name in (
        "quality", "fastbert", "mtdnn", "analysis", "claims", "byom", "tasks",
        "seq2seq", "escape")},
    PERFORMANCE_PAGE: {"throughput": "throughput", "fused-adam": "fused_adam",
                       "cli-startup": "cli_startup", "cache-memory": "cache_memory",
                       "length_buckets": "length_buckets", "precision": "precision",
                       "seq2seq-decoding": "seq2seq_decoding",
                       "seq2seq-buckets": "seq2seq_buckets"},
    README: {"quickstart": "quickstart"},
}
# A section: its markers, not quoted in a code span (`benchlib.write_marked_section`).
MARKED = re.compile(r"(?<!`)<!-- ([\w-]+):start -->.*?(?<!`)<!-- \1:end -->", re.S)


def sections(text):
    """The names of `text`'s marked sections."""
    return [m.group(1) for m in MARKED.finditer(text)]


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=os.path.basename)
def test_every_generated_section_is_its_results_file_rendered(page, tmp_path):
    scripts = SECTION_SCRIPTS[page]
    copy = tmp_path / os.path.basename(page)
    shutil.copyfile(page, copy)
    original = copy.read_text(encoding="utf-8")
    assert set(sections(original)) == set(scripts), f"{page}: sections"
    for script_name in sorted(set(scripts.values())):
        script = load_bench_script(script_name)
        script.main(["--render-only", "--write-docs", str(copy)])
    rendered = copy.read_text(encoding="utf-8")
    if rendered != original:
        changed = [n for n in scripts if section_text(rendered, n) != section_text(
            original, n)]
        pytest.fail(f"{os.path.relpath(page, ROOT)}: the sections {changed} differ from "
                    "their results files rendered (`python bench/<script>.py "
                    "--render-only`)")


def section_text(text, name):
    match = re.search(rf"(?<!`)<!-- {name}:start -->.*?(?<!`)<!-- {name}:end -->", text,
                      re.S)
    return match.group(0) if match else None


# --------------------------------------------------------------------------
# Numbers written by hand

NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:k\b|%)?")
NOT_MEASURED = [
    re.compile(r"`[^`]*`"),                     # code, config keys, commands
    re.compile(r"\]\([^)]*\)"),                 # link targets
    re.compile(r"\d{4}-\d{2}-\d{2}"),           # dates
    re.compile(r"\b(?:19|20)\d{2}\b"),          # years (papers, dates)
    re.compile(r"#\d+"),                        # issue numbers
    re.compile(r"kdplug \d+\.\d+(?:\.\d+)?"),      # releases
    re.compile(r"\b\d+(?:\.\d+)?x\d+\b"),       # shapes (4 x 312 is spaced)
    re.compile(r"compute capability \d+\.\d+"),  # GPU generations
]


def hand_written(text):
    """The page without its generated sections and what is not a
    measurement (`NOT_MEASURED`)."""
    text = MARKED.sub(" ", text)
    for pattern in NOT_MEASURED:
        text = pattern.sub(" ", text)
    return text


def measurements(text):
    """The numbers of `text` that are measurements: a decimal point, a
    percentage, or four or more digits (thousands separators and a `k`
    suffix allowed)."""
    found = []
    for token in NUMBER.findall(text):
        digits = token.lstrip("+-").rstrip("%k").replace(",", "")
        if "." in digits or token.endswith("%") or len(digits.split(".")[0]) >= 4 or \
                token.endswith("k"):
            found.append(token)
    return found


def section_numbers():
    """Every number the generated sections of the pages show, as written
    (sign dropped): the hand-written text may quote them."""
    shown = set()
    for page in PAGES:
        with open(page, encoding="utf-8") as f:
            for section in MARKED.finditer(f.read()):
                shown.update(token.lstrip("+-") for token in NUMBER.findall(
                    section.group(0)))
    return shown


@pytest.mark.parametrize("page", PAGES, ids=os.path.basename)
def test_every_hand_written_number_is_one_a_section_shows(page):
    shown = section_numbers()
    with open(page, encoding="utf-8") as f:
        text = hand_written(f.read())
    missing = [token for token in measurements(text) if token.lstrip("+-") not in shown]
    assert not missing, (
        f"{os.path.relpath(page, ROOT)}: numbers written by hand that no generated "
        f"section shows (each section is its results file rendered, checked above): "
        f"{missing}; quote a section's number as it shows it, or leave it out")


def test_the_number_check_by_hand():
    text = hand_written("<!-- x:start -->0.1234<!-- x:end --> teacher 0.8651, `lr 3e-4` "
                        "on 2026-11-28 (Sun et al. 2019), 93k sentences, 3 layers, "
                        "97.0% kept, -1.04 points, [a](b-1.5.md), kdplug 0.3")
    assert measurements(text) == ["0.8651", "93k", "97.0%", "-1.04"]
    assert measurements("4 x 312, 1,060 sentences, 12 ms") == ["1,060"]
