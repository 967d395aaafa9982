"""The documentation can be trusted (issue #50): its links resolve, its
Python blocks run or say why not, the `kdplug` commands it names exist and
the config keys its YAML blocks use are real.

Conventions (docs/README.md, "Conventions"): a ```python block either runs
here (in a temporary folder, in seconds), is run by another test (the
README's "Using it from Python", tests/test_readme_python_example.py; a
```python file=NAME block, tests/test_writing_a_plugin.py), or is marked as an illustration by an HTML comment `<!-- illustration: why -->`
on the line before its fence.
"""

import argparse
import pathlib
import re

import pytest
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```", re.S | re.M)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)|!\[[^\]]*\]\(([^)\s]+)\)")
ILLUSTRATION = "<!-- illustration"


def page_id(path):
    return str(path.relative_to(ROOT))


def prose(text):
    """`text` without its fenced blocks and inline code."""
    text = FENCE.sub("", text)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading):
    """GitHub's anchor for a heading."""
    heading = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", heading).replace(" ", "-")


def anchors(path):
    seen, result = {}, set()
    for line in FENCE.sub("", path.read_text(encoding="utf-8")).splitlines():
        match = re.match(r"#{1,6}\s+(.*)", line)
        if match:
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            result.add(base if count == 0 else f"{base}-{count}")
    return result


def blocks(path, language):
    """(line, marked as an illustration, info string after the language, code)
    for each fenced block of `language` in `path`."""
    text = path.read_text(encoding="utf-8")
    for match in FENCE.finditer(text):
        if match.group(1) == language:
            before = text[:match.start()].rstrip("\n").rsplit("\n", 1)[-1]
            line = text[:match.start()].count("\n") + 1
            yield line, before.strip().startswith(ILLUSTRATION), match.group(2), match.group(3)


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_relative_link_resolves(page):
    broken = []
    for match in LINK.finditer(prose(page.read_text(encoding="utf-8"))):
        target = match.group(1) or match.group(2)
        if re.match(r"[a-z]+:", target) or target.startswith("//"):
            continue
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor.lower() not in anchors(dest):
            broken.append(f"{target}: no heading #{anchor}")
    assert not broken, f"{page_id(page)}: " + "; ".join(broken)


# The python blocks another test runs as written.
RUN_ELSEWHERE = {"README.md": "tests/test_readme_python_example.py"}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_python_block_runs_or_is_an_illustration(page, tmp_path, monkeypatch):
    if page_id(page) in RUN_ELSEWHERE:
        assert (ROOT / RUN_ELSEWHERE[page_id(page)]).exists()
        return
    tests = "".join(p.read_text(encoding="utf-8") for p in (ROOT / "tests").rglob("test_*.py"))
    unmarked = []
    for line, marked, info, code in blocks(page, "python"):
        name = re.search(r"file=(\S+)", info)
        if name:  # `python file=NAME`: a test runs it as written
            assert f"python file={name.group(1)}" in tests, f"{page_id(page)}:{line}: no test runs it"
        elif not marked:
            unmarked.append((line, code))
    monkeypatch.chdir(tmp_path)
    for line, code in unmarked:
        exec(compile(code, f"{page_id(page)}:{line}", "exec"), {})  # noqa: S102


def cli_commands():
    from kdplug.cli import build_parser

    parser = build_parser()
    commands = {}
    for action in parser._actions:  # noqa: SLF001
        if isinstance(action, argparse._SubParsersAction):  # noqa: SLF001
            for name, sub in action.choices.items():
                options = {o for a in sub._actions for o in a.option_strings}  # noqa: SLF001
                nested = {n for a in sub._actions  # noqa: SLF001
                          if isinstance(a, argparse._SubParsersAction)  # noqa: SLF001
                          for n in a.choices}
                for a in sub._actions:  # noqa: SLF001
                    if isinstance(a, argparse._SubParsersAction):  # noqa: SLF001
                        for s in a.choices.values():
                            options |= {o for b in s._actions for o in b.option_strings}  # noqa: SLF001
                commands[name] = (options | {"-v", "--verbose", "-h", "--help"}, nested)
    return commands


KDPLUG_CALL = re.compile(r"(?:^|[\s`(|&;])kdplug((?: +(?:-v|--verbose))? +[a-z][a-z-]*[^`\n|;&)]*)")


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_kdplug_command_named_exists(page):
    commands = cli_commands()
    text = page.read_text(encoding="utf-8")
    wrong = []
    for match in KDPLUG_CALL.finditer(text):
        words = match.group(1).split()
        words = [w for w in words if w not in ("-v", "--verbose")]
        if not words or not re.fullmatch(r"[a-z][a-z-]*", words[0]):
            continue
        name = words[0]
        if name not in commands:
            # prose ("kdplug is ...", "kdplug does ..."): only flag a word
            # that looks like a command in a command context
            if match.group(0).lstrip().startswith("`") or "\n$ " in match.group(0):
                wrong.append(f"kdplug {name}")
            continue
        options, nested = commands[name]
        for word in words[1:]:
            option = re.match(r"(--?[a-zA-Z][\w-]*)", word)
            if option and option.group(1) not in options and word.startswith("-"):
                wrong.append(f"kdplug {name} {option.group(1)}")
    assert not wrong, f"{page_id(page)}: unknown " + ", ".join(sorted(set(wrong)))


def config_key_names():
    from kdplug.config.experiment_config import document_keys

    return {field.name for field in document_keys()}


def section_fields(section, value):
    """The keys a config section may hold: the fields of its dataclass, or of
    the `Config` of the method / student kind it names; None where that is
    not known (a plugin section that names no plugin, a plain value)."""
    import dataclasses

    from kdplug.config.experiment_config import document_keys
    from kdplug.plugin.manager import get_plugin_manager

    for field in document_keys():
        if field.name == section and dataclasses.is_dataclass(field.type) \
                and section not in ("method", "student"):
            return {f.name for f in dataclasses.fields(field.type)}
    plugin_key = {"method": ("name", "methods"), "student": ("kind", "students")}
    if section not in plugin_key or not isinstance(value, dict):
        return None
    key, registry = plugin_key[section]
    if value.get(key) not in getattr(get_plugin_manager(), registry).names():
        return None
    config = getattr(getattr(get_plugin_manager(), registry).get(value[key]), "Config", None)
    if config is None or not dataclasses.is_dataclass(config):
        return None
    return {key} | {f.name for f in dataclasses.fields(config)}


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_yaml_config_block_uses_real_keys(page):
    """Top-level keys, the keys of the built-in sections (data, teacher,
    training, evaluation, ...) and those of a `method:` / `student:` section
    that names its plugin."""
    keys = config_key_names()
    wrong = []
    for line, marked, _, code in blocks(page, "yaml"):
        try:
            documents = list(yaml.safe_load_all(code))
        except yaml.YAMLError as error:
            if not marked:
                wrong.append(f"line {line}: not YAML ({error.__class__.__name__})")
            continue
        for data in documents:
            if not isinstance(data, dict) or not set(data) & keys:
                continue  # not a config (a plugin's entry points, a results file)
            unknown = set(data) - keys
            if unknown and not marked:
                wrong.append(f"line {line}: unknown top-level keys {sorted(unknown)}")
            for section, value in data.items():
                fields = section_fields(section, value)
                if isinstance(value, dict) and fields is not None and not marked:
                    unknown = set(value) - fields
                    if unknown:
                        wrong.append(f"line {line}: unknown keys {section}.{sorted(unknown)}")
    assert not wrong, f"{page_id(page)}: " + "; ".join(wrong)


def test_the_command_check_catches_a_wrong_command_and_option():
    text = "run `kdplug validate x.yaml --bild` and `kdplug frobnicate x`"
    found = [m.group(1).split()[:3] for m in KDPLUG_CALL.finditer(text)]
    assert ["validate", "x.yaml", "--bild"] in found and ["frobnicate", "x"] in found
    options, _ = cli_commands()["validate"]
    assert "--build" in options and "--bild" not in options


def test_the_link_check_reads_github_anchors():
    assert slug("Loss scaling: one global batch") == "loss-scaling-one-global-batch"
    assert slug("BERT -> seq2seq: C-MLM") == "bert---seq2seq-c-mlm"
    assert slug("Quality: every method on movie_snippets") == "quality-every-method-on-movie_snippets"


def test_the_key_check_knows_sections_and_plugins():
    assert "temperature" in section_fields("method", {"name": "kd"})
    assert "temprature" not in section_fields("method", {"name": "kd"})
    assert "layers" in section_fields("student", {"kind": "truncated"})
    assert "path" in section_fields("data", {})
    assert section_fields("method", {"alpha": 0.5}) is None


@pytest.mark.parametrize("page", PAGES, ids=page_id)
def test_every_generated_section_keeps_both_markers(page):
    """A bench script rewrites what lies between `<!-- name:start ... -->`
    and `<!-- name:end -->`; a lost marker would make it write elsewhere."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    text = re.sub(r"`[^`\n]*`", "", text)
    starts = re.findall(r"<!-- ([\w-]+):start[ -]", text)
    ends = re.findall(r"<!-- ([\w-]+):end -->", text)
    assert sorted(starts) == sorted(ends), f"{page_id(page)}: {starts} vs {ends}"
    for name in starts:
        assert text.index(f"<!-- {name}:start") < text.index(f"<!-- {name}:end -->")
