"""The layout rules of docs/architecture.md, checked on the code itself."""

import ast
import pathlib
import re

from kdplug.plugin.manager import get_plugin_manager

ROOT = pathlib.Path(__file__).parents[1]
CORE = ROOT / "kdplug"
PLUGINS = ROOT / "plugins"


def code_strings_and_names(path):
    """`(line, text)` of every string constant that is not a docstring and
    every identifier (names, attributes, functions, classes, imports)."""
    tree = ast.parse(path.read_text())
    docstrings = set()  # docstrings, and a class's one-line `description`
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                             ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(
                    body[0].value, ast.Constant) and isinstance(body[0].value.value, str):
                docstrings.add(id(body[0].value))
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.Assign) and [
                        getattr(t, "id", None) for t in item.targets] == ["description"]:
                    docstrings.update(id(n) for n in ast.walk(item.value))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in docstrings:
                yield node.lineno, node.value
        elif isinstance(node, ast.Name):
            yield node.lineno, node.id
        elif isinstance(node, ast.Attribute):
            yield node.lineno, node.attr
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            yield node.lineno, node.name
        elif isinstance(node, ast.alias):
            yield node.lineno, node.name


def words(text):
    """Lower-case words of a string or identifier (`BiLstmEncoder` ->
    bi, lstm, encoder; `mtdnn-ensemble` -> mtdnn, ensemble)."""
    text = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+", text) if w]


def method_words():
    """The words of every built-in method name that is not also the name of
    a registered student kind (a BiLSTM is a student any method can train)."""
    pm = get_plugin_manager()
    students = set(pm.students.names())
    return {name: words(name) for name in pm.methods.names() if name not in students}


def test_no_method_name_in_the_core_outside_docstrings():
    methods = method_words()
    assert {"kd", "pkd", "fastbert", "mtdnn-ensemble", "tinybert"} <= set(methods)
    found = []
    for path in sorted(CORE.rglob("*.py")):
        for line, text in code_strings_and_names(path):
            tokens = words(text)
            for name, parts in methods.items():
                n = len(parts)
                if any(tokens[i:i + n] == parts for i in range(len(tokens) - n + 1)):
                    found.append(f"{path.relative_to(ROOT)}:{line}: {text!r} ({name})")
    assert not found, "method names in kdplug/ code:\n" + "\n".join(found)


def test_wire_keys_are_spelled_only_in_keys_py():
    found = []
    for path in sorted([*CORE.rglob("*.py"), *PLUGINS.rglob("*.py")]):
        if path == CORE / "keys.py":
            continue
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                    node.value.startswith("teacher/")):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value!r}")
            if isinstance(node, (ast.Tuple, ast.List)):
                items = {e.value for e in node.elts if isinstance(e, ast.Constant)}
                if {"token_ids", "padding_mask"} <= items:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: input-key tuple")
    assert not found, "wire keys outside kdplug/keys.py:\n" + "\n".join(found)
