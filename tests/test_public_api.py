"""The plugin API (docs/writing-a-plugin.md, "The plugin API"): what the
package faces export resolves, and the built-in plugins use nothing else."""

import ast
import importlib
import pathlib
import subprocess
import sys

import pytest

from kdplug._lazy import own_imports
from kdplug._lazy import type_checking_imports

ROOT = pathlib.Path(__file__).parents[1]
PLUGINS = ROOT / "plugins"

# The modules a plugin imports kdplug from; each one's `__all__` is what it
# may import. Every other module of kdplug is internal.
FACES = (
    "kdplug", "kdplug.analysis", "kdplug.config", "kdplug.data", "kdplug.errors",
    "kdplug.evaluation", "kdplug.keys", "kdplug.mapping", "kdplug.models",
    "kdplug.plugin", "kdplug.run", "kdplug.run_files", "kdplug.storage",
    "kdplug.students", "kdplug.tasks", "kdplug.teacher", "kdplug.terms",
    "kdplug.training",
)

# The contracts plugins implement or call, type-checked by mypy (setup.cfg).
CONTRACTS = (
    "kdplug/plugin/method.py", "kdplug/plugin/student_kind.py",
    "kdplug/plugin/configurable.py", "kdplug/plugin/registry.py",
    "kdplug/plugin/manager.py", "kdplug/terms/term.py",
    "kdplug/mapping/layer_mapping.py", "kdplug/data/augmentation.py",
    "kdplug/run/runner.py", "kdplug/training/distiller.py",
    "kdplug/training/distill.py",
)


def packages():
    """Every package of kdplug (`kdplug`, `kdplug.data`, ...)."""
    core = ROOT / "kdplug"
    return sorted(".".join(("kdplug", *p.parent.relative_to(core).parts))
                  for p in core.rglob("__init__.py"))


def public(face):
    """The names `face` exports: its `__all__`."""
    return set(importlib.import_module(face).__all__)


@pytest.mark.parametrize("package", packages())
def test_every_export_of_a_package_resolves(package):
    """Every name a package offers (`__all__`, and `dir()`, which lists its
    lazy exports before their first use) loads."""
    module = importlib.import_module(package)
    offered = {*getattr(module, "__all__", ()), *dir(module)}
    missing = [name for name in sorted(offered) if not hasattr(module, name)]
    assert not missing, f"{package} exports names it cannot give: {missing}"


@pytest.mark.parametrize("face", [f for f in FACES if f in packages()])
def test_a_face_declares_every_name_it_imports(face):
    """What a package face imports from its own modules, or loads lazily
    (`if TYPE_CHECKING:`), is in its `__all__` (`lazy_exports` makes it
    so; a face without lazy names writes its own)."""
    path = importlib.import_module(face).__file__
    imported = {*own_imports(path, face), *type_checking_imports(path)}
    undeclared = sorted(imported - public(face))
    assert not undeclared, f"{face}: add to __all__: {undeclared}"


def plugin_api_uses(tree):
    """`(line, face, name)` of every kdplug name `tree` imports or reads
    through a face module (`kdplug.Stage`, `keys.LABELS` after `from kdplug
    import keys`); `face` is the module the name is taken from."""
    bound = {}  # local name -> the kdplug module it names
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "kdplug":
                    if alias.asname:
                        bound[alias.asname] = alias.name
                    else:
                        bound["kdplug"] = "kdplug"
                    yield node.lineno, alias.name, None
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (
                node.module or "").split(".")[0] == "kdplug":
            for alias in node.names:
                module = f"{node.module}.{alias.name}"
                if module in FACES:
                    bound[alias.asname or alias.name] = module
                else:
                    yield node.lineno, node.module, alias.name
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute):
            continue
        attrs, value = [], node
        while isinstance(value, ast.Attribute):
            attrs.insert(0, value.attr)
            value = value.value
        if isinstance(value, ast.Name) and value.id in bound:
            module = bound[value.id]
            for attr in attrs:  # `kdplug.data.TextCorpus`: face `kdplug.data`
                if f"{module}.{attr}" not in FACES:
                    yield node.lineno, module, attr
                    break
                module = f"{module}.{attr}"


def test_plugins_use_only_the_plugin_api():
    found = set()
    for path in sorted(PLUGINS.rglob("*.py")):
        for line, module, name in plugin_api_uses(ast.parse(path.read_text())):
            if module not in FACES:
                found.add(f"{path.relative_to(ROOT)}:{line}: {module} is not a face")
            elif name is not None and name not in public(module):
                found.add(f"{path.relative_to(ROOT)}:{line}: {module}.{name} is not "
                          f"in {module}.__all__")
    assert not found, "plugins reach past the plugin API:\n" + "\n".join(sorted(found))


def test_the_contracts_type_check():
    """mypy on the contracts (setup.cfg's `[mypy]`: every function
    annotated; TensorFlow, Keras and kdplug's other modules read as `Any`)."""
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "setup.cfg",
         "--cache-dir", "/dev/null", *CONTRACTS],
        cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
