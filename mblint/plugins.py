"""Rule packs are pluggy plugins. A pack is a module (or any object) with ``@hookimpl``
functions for the hooks specified here, registered through the ``mblint`` entry-point group:

    [project.entry-points.mblint]
    my_pack = "my_pack"

The built-in pack (``mblint_rules``) registers the same way; the engine holds no list of
rules. A pack that cannot be loaded, implements no hook, or whose hook fails is reported as
an error naming it, and the run's other packs still load.
"""

from __future__ import annotations

import importlib
from functools import reduce

import pluggy

from mblint.catalog import LoadedPlugins

PROJECT = "mblint"
hookspec = pluggy.HookspecMarker(PROJECT)
hookimpl = pluggy.HookimplMarker(PROJECT)

__all__ = ["PROJECT", "LoadedPlugins", "RulePackSpec", "hookimpl", "hookspec", "load_plugins"]


class RulePackSpec:
    """The hooks a rule pack may implement."""

    @hookspec
    def mblint_rules(self) -> list:
        """Return the rule classes (``mblint.rulekit.Rule`` subclasses) this pack provides."""

    @hookspec
    def mblint_default_settings(self) -> dict:
        """Return default settings this pack contributes (merged under the user's)."""


def plugin_manager() -> pluggy.PluginManager:
    manager = pluggy.PluginManager(PROJECT)
    manager.add_hookspecs(RulePackSpec)
    return manager


def installed_packs() -> list[list]:
    """[name, value, module, attribute, version] of each entry point of the ``mblint`` group,
    by name (of two of one name, the first on the path)."""
    from importlib.metadata import entry_points  # 12 % of a one-file run: not when the catalog names the packs

    found: dict = {}
    for entry_point in entry_points(group=PROJECT):
        version = entry_point.dist.version if entry_point.dist is not None else None
        found.setdefault(entry_point.name, [entry_point.name, entry_point.value, entry_point.module,
                                            entry_point.attr or "", version])
    return [found[name] for name in sorted(found)]


def load_plugins(packs: list | None = None) -> LoadedPlugins:
    """Load every entry point of the ``mblint`` group (``packs``: those a current plugin catalog
    names, as ``installed_packs`` lists them) through the plugin manager and gather the rules
    and default settings by calling each pack's hooks."""
    manager = plugin_manager()
    loaded = LoadedPlugins()
    loaded.packs = installed_packs() if packs is None else packs
    for name, value, module, attribute, version in loaded.packs:
        where = f"rule pack {name!r} ({value})"
        try:  # what EntryPoint.load does
            plugin = reduce(getattr, filter(None, attribute.split(".")), importlib.import_module(module))
            manager.register(plugin, name=name)
        except Exception as error:  # noqa: BLE001 - a broken pack must not stop the others
            loaded.errors.append(f"{where} failed to load: {type(error).__name__}: {error}")
            continue
        if not manager.get_hookcallers(plugin):
            manager.unregister(plugin)
            loaded.errors.append(f"{where} implements no mblint hook: mark its mblint_rules function "
                                 "with @hookimpl (from mblint.rulekit import hookimpl)")
            continue
        try:
            rules = [rule for answer in _call(manager, plugin, "mblint_rules") for rule in answer or ()]
            defaults = _call(manager, plugin, "mblint_default_settings")
        except Exception as error:  # noqa: BLE001
            manager.unregister(plugin)
            loaded.errors.append(f"{where} failed: {type(error).__name__}: {error}")
            continue
        loaded.rules.extend(_valid_rules(name, rules, loaded.errors))
        for answer in defaults:
            loaded.defaults.update(answer or {})
        loaded.modules.append(getattr(plugin, "__name__", type(plugin).__module__))
        if version is not None:
            loaded.versions[name] = version
    _drop_duplicate_ids(loaded)
    return loaded


def _call(manager: pluggy.PluginManager, plugin: object, hook: str) -> list:
    """The answers of ``plugin``'s implementations of ``hook`` alone (so that an error names
    the pack it comes from)."""
    others = [other for other in manager.get_plugins() if other is not plugin]
    return manager.subset_hook_caller(hook, remove_plugins=others)()


def _valid_rules(plugin: str, rules: list, errors: list[str]) -> list:
    from mblint.rule import Rule

    valid = []
    for rule in rules:
        if not (isinstance(rule, type) and issubclass(rule, Rule)):
            errors.append(f"rule pack {plugin!r} returned {rule!r}, which is not a Rule class")
            continue
        problems = rule.problems()
        if problems:
            errors.append(f"rule pack {plugin!r}: rule {rule.__name__} skipped: {'; '.join(problems)}")
            continue
        valid.append(rule)
    return valid


def _drop_duplicate_ids(loaded: LoadedPlugins) -> None:
    seen: dict[str, type] = {}
    unique = []
    for rule in loaded.rules:
        if rule.id in seen and seen[rule.id] is not rule:
            loaded.errors.append(f"rule id {rule.id} is defined twice ({seen[rule.id].__name__}, {rule.__name__}); "
                                 "the second is skipped")
            continue
        seen[rule.id] = rule
        if rule not in unique:
            unique.append(rule)
    loaded.rules = sorted(unique, key=lambda r: r.id)
