"""setup.cfg lists packages explicitly (plugins/ installs as kdplug_plugins)."""

import configparser
import pathlib

ROOT = pathlib.Path(__file__).parents[1]


def listed_packages():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    return {p.strip() for p in cfg["options"]["packages"].split("\n") if p.strip()}


def package_folders():
    found = set()
    for top, name in (("kdplug", "kdplug"), ("plugins", "kdplug_plugins")):
        for init in (ROOT / top).rglob("__init__.py"):
            rel = init.parent.relative_to(ROOT / top).parts
            found.add(".".join((name, *rel)))
    return found


def test_every_package_folder_is_listed_in_setup_cfg():
    assert package_folders() == listed_packages()


def test_every_builtin_plugin_has_an_entry_point():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    entry = cfg["options.entry_points"]["kdplug.plugins"]
    targets = {line.split("=")[1].strip() for line in entry.split("\n") if "=" in line}
    plugin_packages = {p for p in listed_packages() if p.count(".") == 1
                       and p.startswith("kdplug_plugins.")}
    assert plugin_packages == targets
