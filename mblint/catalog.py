"""What the installed rule packs provide, remembered between cached runs, so that a run whose
files are all served from the result cache neither scans entry points nor imports a rule.

The catalog (``plugins.json`` in the cache folder, believed only in the folder that wrote it:
``mblint.cache.folder_identity``, as the result cache's entries) holds each rule's metadata (id, name,
severity, documentation...), the plugin versions, the rules' fingerprint and the entry points
of the packs: a cached run that has files to check imports those packs without scanning the
installed distributions (importing ``importlib.metadata`` and scanning is about a tenth of a
pre-commit run on one edited file). It is used only while everything it was built from is
unchanged: the ``sys.path`` folders (a package installed or removed changes its folder), and
every file and folder of the rule packs and of the modules defining the rule classes and their
bases (stat signatures). A rule pack that failed to load is never catalogued. Files changed
within the racy window of the write (``mblint.cache.racy``) are not trusted either: the
catalog is then not written.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from mblint import __version__
from mblint.cache import environment_key, folder_identity, make_cache_folder, racy, stat_signature, write_entry
from mblint.findings import Severity
from mblint.paths import read_json

CATALOG_FILE = "plugins.json"
RULE_ATTRIBUTES = ("id", "name", "summary", "doc", "versions", "requires", "tags", "fixable", "help_uri")


class LoadedPlugins:
    """What the rule packs provide (mblint.plugins.load_plugins, or the catalog)."""

    __slots__ = ("rules", "defaults", "errors", "versions", "modules", "fingerprint", "packs", "files")

    def __init__(self, rules: list | None = None, defaults: dict | None = None, errors: list[str] | None = None,
                 versions: dict[str, str] | None = None, modules: list[str] | None = None,
                 fingerprint: str = "", packs: list | None = None, files: list[str] | None = None) -> None:
        self.rules = [] if rules is None else rules
        self.defaults = {} if defaults is None else defaults
        self.errors = [] if errors is None else errors
        self.versions = {} if versions is None else versions
        self.modules = [] if modules is None else modules  # the plugin modules loaded
        self.fingerprint = fingerprint  # of the rules, when they come from the catalog
        self.packs = [] if packs is None else packs  # the entry points loaded (mblint.plugins.installed_packs)
        self.files = [] if files is None else files  # what the catalog depends on, when it comes from one


class CataloguedRule:
    """Stands in for a rule class where only its metadata is needed (selection, suppression
    aliases, report rule lists). The engine loads the real classes before checking a file."""

    def __init__(self, data: dict) -> None:
        for attribute in RULE_ATTRIBUTES:
            value = data.get(attribute, ())
            setattr(self, attribute, tuple(value) if isinstance(value, list) else value)
        self.severity = Severity(data["severity"])
        self.precision = data.get("precision")

    def __repr__(self) -> str:
        return f"<catalogued rule {self.id}>"

    def applies_to(self, schema) -> bool:
        from mblint.rule import Rule

        return Rule.applies_to.__func__(self, schema)


def rule_record(rule: Any) -> dict:
    record = {attribute: getattr(rule, attribute) for attribute in RULE_ATTRIBUTES}
    record["versions"] = list(record["versions"])
    record["requires"] = list(record["requires"] or ())
    record["tags"] = list(record["tags"] or ())
    record["severity"] = int(rule.severity)
    record["precision"] = getattr(rule, "precision", None)
    return record


def load_catalog(folder: Path):
    """The catalogued plugins (a ``LoadedPlugins`` of ``CataloguedRule``), or None when there
    is no catalog or anything it depends on changed."""
    try:
        data = read_json(folder / CATALOG_FILE, follow_links=False)
        if data["mblint"] != __version__ or data["environment"] != environment_key():
            return None
        if data["folder"] != folder_identity(folder):  # a catalog that came with a checkout: never believed
            return None
        if any(stat_signature(path) != signature for path, signature in data["files"].items()):
            return None
        rules = [CataloguedRule(record) for record in data["rules"]]
        return LoadedPlugins(rules=rules, defaults=data["defaults"], versions=data["versions"],
                             fingerprint=data["fingerprint"], packs=data["packs"], files=list(data["files"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def save_catalog(folder: Path, plugins, fingerprint: str) -> list[str]:
    """Record ``plugins`` (real rule classes, loaded without errors); the files the catalog
    depends on, or [] when it is not written."""
    if plugins.errors:
        return []
    started = time.time_ns()
    files = {path: stat_signature(path) for path in sorted(source_files(plugins))}
    if any(signature is None or racy(signature, started) for signature in files.values()):
        return []
    data = {"mblint": __version__, "environment": environment_key(), "files": files,
            "rules": [rule_record(rule) for rule in plugins.rules], "defaults": plugins.defaults,
            "versions": plugins.versions, "fingerprint": fingerprint, "packs": plugins.packs}
    try:
        make_cache_folder(folder)
    except OSError:
        return []
    data["folder"] = folder_identity(folder)
    return list(files) if write_entry(str(folder / CATALOG_FILE), data) else []  # else the next run loads the packs


def source_files(plugins) -> set[str]:
    """Every file and folder the rule metadata comes from: the plugin packages (whole trees:
    a new rule module appears there), and the modules of the rule classes and their bases."""
    found: set[str] = set()
    for module_name in plugins.modules:
        _add_module(sys.modules.get(module_name), found)
    for rule in plugins.rules:
        for cls in rule.__mro__[:-1]:
            _add_module(sys.modules.get(cls.__module__), found)
    return found


def _add_module(module: Any, found: set[str]) -> None:
    if module is None:
        return
    file = getattr(module, "__file__", None)
    if file:
        found.add(os.path.abspath(file))
    for folder in getattr(module, "__path__", None) or ():
        for root, dirs, files in os.walk(folder):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            found.add(os.path.abspath(root))
            found.update(os.path.abspath(os.path.join(root, name)) for name in files if name.endswith(".py"))
