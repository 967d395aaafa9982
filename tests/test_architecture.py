"""The layout rules of docs/architecture.md, checked on the code itself."""

import ast
import pathlib
import re

from kdplug.plugin.manager import get_plugin_manager

ROOT = pathlib.Path(__file__).parents[1]
CORE = ROOT / "kdplug"
PLUGINS = ROOT / "plugins"
BENCH = ROOT / "bench"


def docstring_ids(tree):
    """`id()`s of the docstring nodes of a module's tree, and of a class's
    one-line `description`."""
    docstrings = set()
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
    return docstrings


def code_strings_and_names(path):
    """`(line, text)` of every string constant that is not a docstring and
    every identifier (names, attributes, functions, classes, imports)."""
    tree = ast.parse(path.read_text())
    docstrings = docstring_ids(tree)
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


# The floors of docs/architecture.md ("Floors"), lowest first. A module of
# kdplug/ imports kdplug only from a lower floor or from its own package.
# An entry is a package or root module of kdplug/ (`__init__`: the `kdplug`
# face), or one module of a package that stands on a higher floor than the
# rest of its package: `config.loading` (reading a config file resolves the
# registered plugins; the library floors below take typed sections) and
# `plugin.method` (the method contract names task kinds, students, terms).
FLOORS = [
    ("errors",),
    ("keys", "_lazy", "run_files"),
    ("storage",),
    ("plugin",),
    ("config",),
    ("models",),
    ("data",),
    ("mapping", "evaluation"),
    ("terms",),
    ("students", "training"),
    ("config.loading",),
    ("finished_run",),
    ("teacher",),
    ("tasks",),
    ("analysis",),
    ("plugin.method",),
    ("run",),
    ("_compat",),
    ("__init__",),
    ("cli", "testing"),
]


def module_names(root):
    """`{path: dotted name under kdplug}` of every module of `root`/kdplug
    (`plugin.method`, `plugin` for kdplug/plugin/__init__.py, `__init__`
    for kdplug/__init__.py)."""
    core = root / "kdplug"
    names = {}
    for path in sorted(core.rglob("*.py")):
        parts = list(path.relative_to(core).with_suffix("").parts)
        if parts[-1] == "__init__" and len(parts) > 1:
            parts.pop()
        names[path] = ".".join(parts)
    return names


def kdplug_imports(tree, modules):
    """`(line, module)` of every kdplug module `tree` imports, at any depth
    (inside functions too), except type-only imports (`if TYPE_CHECKING:`),
    which never run. `from kdplug import x` imports the module `x` when
    there is one, else the `kdplug` face (`__init__`)."""
    type_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                 and ast.unparse(node.test).endswith("TYPE_CHECKING")
                 for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in type_only:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            targets = ([f"{node.module}.{a.name}" for a in node.names]
                       if node.module == "kdplug" else [node.module])
        else:
            continue
        for target in targets:
            parts = target.split(".")
            if parts[0] != "kdplug":
                continue
            name = ".".join(parts[1:])
            yield node.lineno, name if name in modules else "__init__"


def floor_of(name):
    """The index in `FLOORS` of module `name`: its own entry, else its
    package's."""
    floors = {entry: i for i, entries in enumerate(FLOORS) for entry in entries}
    while name not in floors and "." in name:
        name = name.rpartition(".")[0]
    return floors[name]


def floor_violations(root):
    """Every import in `root`/kdplug of a module on the importer's floor or
    above, outside the importer's own package."""
    names = module_names(root)
    modules = set(names.values())
    found = []
    for path, name in names.items():
        tree = ast.parse(path.read_text())
        for line, target in kdplug_imports(tree, modules):
            if target.split(".")[0] == name.split(".")[0]:
                continue  # within a package
            if floor_of(target) >= floor_of(name):
                found.append(f"{path.relative_to(root)}:{line}: {name} imports "
                             f"{target} (floor {floor_of(target)} >= {floor_of(name)})")
    return found


def test_every_package_has_a_floor():
    tops = {name.split(".")[0] for name in module_names(ROOT).values()}
    placed = {entry for entries in FLOORS for entry in entries}
    assert tops <= placed, f"place these in FLOORS: {sorted(tops - placed)}"


def test_imports_point_down_the_floors():
    found = floor_violations(ROOT)
    assert not found, "imports against the floors (docs/architecture.md):\n" + "\n".join(
        found)


def run_folder_names():
    """`(files, folders)`: the run-folder names `kdplug/run_files.py`
    declares (the `{tag}` templates with `{}` for the field); a name with a
    dot is a file."""
    import kdplug.run_files as run_files

    names = set()
    for key, value in vars(run_files).items():
        if key.isupper():
            names.update([value] if isinstance(value, str) else value)
    names = {re.sub(r"\{[^}]*\}", "{}", name) for name in names}
    return {n for n in names if "." in n}, {n for n in names if "." not in n}


def path_strings(tree, names):
    """`(line, text, in_path)` of the string constants and f-strings (their
    fields as `{}`) of a module, docstrings left out. `in_path`: the string
    is an argument of a path-building call (`os.path.join`, `ctx.path`,
    `folder.file`) that does not follow a `"runs"` argument (`runs/<x>` is
    a run folder named x, not a folder inside one), or an item of a tuple
    of two or more `names`."""
    docstrings = docstring_ids(tree)
    in_path, in_fstring = set(), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(
                node.func, "attr", getattr(node.func, "id", None)) in ("join", "path", "file"):
            in_path.update(id(arg) for before, arg in zip([None, *node.args], node.args)
                           if getattr(before, "value", None) != "runs")
        if isinstance(node, ast.Tuple) and len(node.elts) > 1 and all(
                isinstance(e, ast.Constant) and e.value in names for e in node.elts):
            in_path.update(id(e) for e in node.elts)
        if isinstance(node, ast.JoinedStr):
            in_fstring.update(id(part) for part in node.values)
    for node in ast.walk(tree):
        if id(node) in docstrings or id(node) in in_fstring:
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value, id(node) in in_path
        elif isinstance(node, ast.JoinedStr):
            text = "".join(part.value if isinstance(part, ast.Constant) else "{}"
                           for part in node.values)
            yield node.lineno, text, id(node) in in_path


# The run-folder layout is named once, in kdplug/run_files.py: no other
# module of kdplug/, plugins/ or bench/ spells a file name of it (in code,
# not in docstrings), nor one of its folders where it builds a path; they
# import the name from kdplug.run_files.
def test_run_folder_names_are_spelled_only_in_run_files_py():
    files, folders = run_folder_names()
    assert {"config.yaml", "metrics.json", "{}.weights.h5"} <= files
    assert {"stages", "backup", "tensorboard", "export"} <= folders
    found = []
    for path in sorted(p for top in (CORE, PLUGINS, BENCH) for p in top.rglob("*.py")):
        if path == CORE / "run_files.py":
            continue
        for line, text, in_path in sorted(path_strings(ast.parse(path.read_text()),
                                                       files | folders)):
            if text in files or (in_path and text in folders):
                found.append(f"{path.relative_to(ROOT)}:{line}: {text!r}")
    assert not found, ("run-folder names spelled outside kdplug/run_files.py "
                       "(import them from it):\n" + "\n".join(found))


def test_a_folder_name_counts_inside_a_run_folder_only():
    """`os.path.join(run, "analysis")` builds a path inside a run folder;
    `os.path.join(ROOT, "runs", "analysis")` names a run folder (bench/'s
    own working folders), which any name may."""
    tree = ast.parse('os.path.join(run, "analysis")\n'
                     'os.path.join(ROOT, "runs", "analysis", "x.json")\n')
    assert sorted(path_strings(tree, {"analysis"})) == [
        (1, "analysis", True), (2, "analysis", False), (2, "runs", True),
        (2, "x.json", True)]
