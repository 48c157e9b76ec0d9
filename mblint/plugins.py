"""Pluggy hook specifications. Rule packs, the built-in one included, register through the
``mblint`` entry-point group; the engine holds no list of rules."""

from __future__ import annotations

import importlib
import os
import re
import sys
from importlib.machinery import PathFinder

import pluggy

from mblint.catalog import LoadedPlugins  # noqa: F401 - defined beside the catalog, imported from here
from mblint.paths import read_bytes

PROJECT = "mblint"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)


class RulePackSpec:
    @hookspec
    def mblint_rules(self) -> list:
        """Return the rule classes this pack provides."""

    @hookspec
    def mblint_default_settings(self) -> dict:
        """Return default settings this pack contributes (merged under the user's)."""


def load_plugins(extra_modules: tuple[str, ...] = ()) -> LoadedPlugins:
    """Load every entry point of the ``mblint`` group (and ``extra_modules``). A plugin that
    fails to import or whose hooks raise is reported in ``errors`` and skipped."""
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(RulePackSpec)
    loaded = LoadedPlugins()
    candidates = entry_point_candidates(PROJECT)
    candidates += [(name, name, (lambda n=name: importlib.import_module(n)), "") for name in extra_modules]
    seen_values: set[str] = set()
    for name, value, load, version in candidates:
        if value in seen_values:
            continue
        seen_values.add(value)
        try:
            module = load()
            manager.register(module, name=name)
            rules = module.mblint_rules() if hasattr(module, "mblint_rules") else []
            defaults = module.mblint_default_settings() if hasattr(module, "mblint_default_settings") else {}
        except Exception as error:  # noqa: BLE001 - a broken plugin must not stop the lint
            loaded.errors.append(f"plugin {name!r} ({value}) failed to load: {type(error).__name__}: {error}")
            continue
        loaded.rules.extend(_valid_rules(name, rules or [], loaded.errors))
        loaded.defaults.update(defaults or {})
        loaded.versions[name] = version
        loaded.modules.append(module.__name__)
    _drop_duplicate_ids(loaded)
    return loaded


def entry_point_candidates(group: str) -> list[tuple]:
    """(name, value, load, distribution version) of each entry point in ``group``."""
    found = scan_entry_points(group)
    if found is None:
        from importlib.metadata import entry_points

        found = [(ep.name, ep.value, _dist_version(ep)) for ep in entry_points(group=group)]
    return [(name, value, (lambda v=value: _load_entry_point(v)), version) for name, value, version in found]


def scan_entry_points(group: str) -> list[tuple[str, str, str]] | None:
    """(name, value, version) of each entry point in ``group``, read from the ``.dist-info``
    and ``.egg-info`` folders on ``sys.path`` as ``importlib.metadata`` finds them (the first
    distribution of a name wins), without importing it: that costs a cold run 20 ms. None
    when the path holds something only ``importlib.metadata`` reads (a zip archive, a
    distribution finder of a third-party importer)."""
    if any(hasattr(finder, "find_distributions") and finder is not PathFinder for finder in sys.meta_path):
        return None
    seen: set[str] = set()
    found = []
    for entry in sys.path:
        folder = entry or "."
        if not os.path.isdir(folder):
            if os.path.exists(folder):
                return None
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for info in names:
            if not info.lower().endswith((".dist-info", ".egg-info")):
                continue
            distribution = _normalized(info.lower().rpartition(".")[0].partition("-")[0])
            if distribution in seen:
                continue
            seen.add(distribution)
            found.extend(_entry_points_of(os.path.join(folder, info), group))
    return found


def _entry_points_of(info: str, group: str) -> list[tuple[str, str, str]]:
    try:
        lines = read_bytes(os.path.join(info, "entry_points.txt")).decode("utf-8").splitlines()
    except OSError:
        return []
    section = None
    found = []
    for line in lines:
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == group and "=" in line:
            name, _, value = line.partition("=")
            found.append((name.strip(), value.strip(), ""))
    if found:
        version = _version_of(info)
        found = [(name, value, version) for name, value, _ in found]
    return found


def _version_of(info: str) -> str:
    for metadata in ("METADATA", "PKG-INFO"):
        try:
            with open(os.path.join(info, metadata), encoding="utf-8") as handle:
                for line in handle:
                    if line.startswith("Version:"):
                        return line.partition(":")[2].strip()
                    if not line.strip():
                        break
        except OSError:
            continue
    return ""


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


_ENTRY_POINT_VALUE = re.compile(r"(?P<module>[\w.]+)\s*(:\s*(?P<attribute>[\w.]+)\s*)?((?P<extras>\[.*\])\s*)?$")


def _load_entry_point(value: str):
    """``module`` or ``module:attribute.path`` (extras ignored), as ``EntryPoint.load`` does."""
    match = _ENTRY_POINT_VALUE.match(value)
    if match is None:
        raise ValueError(f"malformed entry point value {value!r}")
    target = importlib.import_module(match.group("module"))
    for attribute in (match.group("attribute") or "").split("."):
        if attribute:
            target = getattr(target, attribute)
    return target


def _dist_version(ep) -> str:
    dist = getattr(ep, "dist", None)
    return getattr(dist, "version", "") if dist is not None else ""


def _valid_rules(plugin: str, rules: list, errors: list[str]) -> list:
    from mblint.rule import Rule

    valid = []
    for rule in rules:
        if not (isinstance(rule, type) and issubclass(rule, Rule)):
            errors.append(f"plugin {plugin!r} returned {rule!r}, which is not a Rule class")
            continue
        problems = rule.problems()
        if problems:
            errors.append(f"plugin {plugin!r}: rule {rule.__name__} skipped: {'; '.join(problems)}")
            continue
        valid.append(rule)
    return valid


def _drop_duplicate_ids(loaded: LoadedPlugins) -> None:
    seen: dict[str, type] = {}
    unique = []
    for rule in loaded.rules:
        if rule.id in seen and seen[rule.id] is not rule:
            loaded.errors.append(f"rule id {rule.id} is defined twice ({seen[rule.id].__name__}, {rule.__name__}); the second is skipped")
            continue
        seen[rule.id] = rule
        if rule not in unique:
            unique.append(rule)
    loaded.rules = sorted(unique, key=lambda r: r.id)
