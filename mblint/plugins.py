"""Pluggy hook specifications. Rule packs, the built-in one included, register through the
``mblint`` entry-point group; the engine holds no list of rules."""

from __future__ import annotations

import importlib

import pluggy

from mblint.catalog import LoadedPlugins  # noqa: F401 - defined beside the catalog, imported from here

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
    from importlib.metadata import entry_points  # slow to import: only when plugins are loaded

    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(RulePackSpec)
    loaded = LoadedPlugins()
    candidates = [(ep.name, ep.value, ep.load, _dist_version(ep)) for ep in entry_points(group=PROJECT)]
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
