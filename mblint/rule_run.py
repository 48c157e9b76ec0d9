"""The rule run: which rules are enabled (the rule pack, ``--select``/``--ignore`` and each
file's settings), and running them on a job's configuration. Rules and their contexts hold no
state of their own, so a plan of the rules to run is made once per distinct setting (schema
line, world size and its source, editable files) and reused for every configuration."""

from __future__ import annotations

import operator
from itertools import chain, repeat
from typing import TYPE_CHECKING, Any, Callable

from mblint.arbitration import most_specific, superseded_by
from mblint.findings import Finding
from mblint.model import EffectiveConfig, Origin
from mblint.rule import Rule, RuleContext
from mblint.schema import load_schema
from mblint.selection import select_rules, selector_problem

if TYPE_CHECKING:
    from mblint.plugins import LoadedPlugins


class RuleRun:
    """The rules of a run. ``rules`` are those in force for the file being read (``enter``
    sets them from its settings); ``used`` every rule in force for some file."""

    def __init__(self, options: Any, plugins: "LoadedPlugins | None" = None) -> None:
        self.options = options
        self.used: set = set()
        self.catalogued = False  # rules are catalog stand-ins (mblint.catalog), not classes
        self.catalog_files: list[str] = []  # what the plugin catalog of this run depends on (``fingerprint``)
        self._plugins = None
        if plugins is not None or not options.use_cache:
            self.use_plugins(plugins)
        # else: with a cache, the plugins come from the catalog when possible (``fingerprint``)

    def use_plugins(self, plugins: "LoadedPlugins | None", catalogued: bool = False) -> None:
        if plugins is None:
            from mblint.plugins import load_plugins

            plugins = load_plugins()
        self._plugins = plugins
        self.catalogued = catalogued
        self._all_rules = list(plugins.rules)
        options = self.options
        for option, selectors in (("--select", options.select), ("--extend-select", options.extend_select),
                                  ("--ignore", options.ignore)):
            problem = selector_problem(option, selectors, self._all_rules)
            if problem:
                from mblint.settings import SettingsError

                raise SettingsError(problem)
        self._base_rules = select_rules(self._all_rules, options.select, options.ignore, options.extend_select)
        self._rules = self._base_rules
        self._by_settings: dict = {}
        self._plans_by_rules: dict = {}  # tuple of enabled rules -> plans by setting
        self._plans_rules: list | None = None
        self._plans: dict = {}
        self._by_id: tuple = (None, {})

    def load_rule_classes(self) -> None:
        """The real rule classes, before any file is checked: from the packs the catalog names
        when the rules come from it (no scan of the installed distributions)."""
        if self._plugins is None or self.catalogued:
            from mblint.plugins import load_plugins

            self.use_plugins(load_plugins(self._plugins.packs if self.catalogued else None))

    def _ensure_plugins(self) -> None:
        if self._plugins is None:
            self.use_plugins(None)

    @property
    def loaded(self) -> bool:
        return self._plugins is not None

    @property
    def plugins(self) -> "LoadedPlugins":
        self._ensure_plugins()
        return self._plugins

    @property
    def all_rules(self) -> list:
        self._ensure_plugins()
        return self._all_rules

    @property
    def base_rules(self) -> list:
        self._ensure_plugins()
        return self._base_rules

    @property
    def rules(self) -> list:
        self._ensure_plugins()
        return self._rules

    @rules.setter
    def rules(self, rules: list) -> None:
        self._rules = rules

    def for_settings(self, settings: Any) -> list[type[Rule]]:
        """The rules enabled under ``settings`` (None: the options' alone)."""
        if settings is None:
            return self.base_rules
        if settings not in self._by_settings:
            opts = self.options
            self._by_settings[settings] = select_rules(
                self.all_rules, opts.select or settings.select or (), settings.ignore + opts.ignore,
                settings.extend_select + opts.extend_select)
        return self._by_settings[settings]

    def enter(self, settings: Any) -> None:
        """The rules of a file under ``settings`` are in force from now on."""
        self.rules = self.for_settings(settings)
        self.used.update(self.rules)

    def in_force(self, rule_id: str):
        """The enabled rule ``rule_id`` for the file being read (its settings applied), or None."""
        rules = self.rules
        if self._by_id[0] is not rules:
            self._by_id = (rules, {rule.id: rule for rule in rules})
        return self._by_id[1].get(rule_id)

    def plan(self, line: str, world_size: int | None, source: str, editable: frozenset[str],
             unknown_at: Origin | None = None) -> "RulePlan":
        """The plan of each enabled rule that checks a configuration of the schema ``line``
        (its key), with its context; made once per distinct setting."""
        key = (line, world_size, source, editable, unknown_at)
        plans = self._plans_for_rules()
        chosen = plans.get(key)
        if chosen is None:
            chosen = plans[key] = RulePlan([
                (rule, RuleContext(rule, world_size, source, editable_paths=editable, world_size_unknown_at=unknown_at))
                for rule in (rule_class() for rule_class in self.rules
                             if rule_class.checks_configurations and rule_class.applies_to(load_schema(line)))])
        return chosen

    def _plans_for_rules(self) -> dict:
        """The plans made for the list of enabled rules in force (a list per distinct settings,
        assigned per file and never changed in place), by setting."""
        rules = self.rules
        if self._plans_rules is not rules:
            self._plans = self._plans_by_rules.setdefault(tuple(rules), {})
            self._plans_rules = rules
        return self._plans

    def run(self, cfg: EffectiveConfig, world_size: int | None, source: str, editable: frozenset[str],
            findings: list[Finding], crashes: list[str], watch_world_size: bool = False,
            unknown_at: Origin | None = None, unknown_environment: dict | None = None) -> set[str]:
        """The enabled rules' findings on ``cfg`` appended to ``findings``; a rule that raises
        adds a message to ``crashes``. With ``watch_world_size``, the ids of the rules that read
        the world size; ``unknown_at``: where the job leaves the world size unknown. With
        ``unknown_environment`` (a dict), each variable of the job's launch environment that a
        rule read and found unknown is recorded in it: (name, where, opened) -> the rules' ids
        (``LaunchEnvironment.unknown_reads``)."""
        calls = self.plan(cfg.schema_version, world_size, source, editable, unknown_at).calls(cfg)
        if watch_world_size:
            for ctx in calls.contexts:
                ctx.read_world_size = False
        environment = cfg.environment
        if unknown_environment is not None and environment is not None and environment.hides_variables:
            calls.run_watching(cfg, findings, crashes, environment.unknown_reads, unknown_environment)
        else:
            calls.run(cfg, findings, crashes)
        return {ctx.rule.id for ctx in calls.contexts if ctx.read_world_size} if watch_world_size else set()

    def fingerprint(self, folder) -> str:
        """Of every rule, from the plugin catalog in ``folder`` when it is current (then no
        rule pack is imported unless a file must be checked), else from the loaded rule classes."""
        from mblint import cache, catalog

        if self._plugins is None:
            catalogued = catalog.load_catalog(folder)
            if catalogued is not None:
                self.use_plugins(catalogued, catalogued=True)
                self.catalog_files = catalogued.files
                return catalogued.fingerprint
            self.use_plugins(None)
            plugin_rules = cache.rules_fingerprint(self.plugins.rules)
            self.catalog_files = catalog.save_catalog(folder, self.plugins, plugin_rules)
            return plugin_rules
        if self.catalogued:
            return self.plugins.fingerprint
        return cache.rules_fingerprint(self.plugins.rules)


class RulePlan:
    """The rules that check configurations of one kind, in order, each with its context. Rules
    that declare a ``precondition`` are left out on a configuration where it is False: each
    distinct precondition is asked once per configuration, and the list of rules to run is
    kept per combination of failed preconditions."""

    def __init__(self, pairs: list[tuple[Rule, RuleContext]]) -> None:
        self.pairs = pairs
        planned = tuple(type(rule) for rule, _ in pairs)
        for _, ctx in pairs:
            ctx.planned_rules = planned
        self.preconditions = tuple(dict.fromkeys(
            type(rule).precondition for rule, _ in pairs if type(rule).precondition is not None))
        self._all_calls = RuleCalls(pairs)
        self._runnable: dict[tuple[bool, ...], RuleCalls] = {}

    def runnable(self, cfg: EffectiveConfig) -> list[tuple[Rule, RuleContext]]:
        return self.calls(cfg).pairs

    def calls(self, cfg: EffectiveConfig) -> "RuleCalls":
        """The rules to run on ``cfg``, as ``runnable`` lists them."""
        if not self.preconditions:
            return self._all_calls
        try:
            failed = tuple([precondition(cfg) is False for precondition in self.preconditions])
        except Exception:  # noqa: BLE001 - asked again one by one, the failing one counts as not False
            failed = tuple([_definitely_false(precondition, cfg) for precondition in self.preconditions])
        chosen = self._runnable.get(failed)
        if chosen is None:
            skipped = {p for p, fails in zip(self.preconditions, failed) if fails}
            chosen = self._runnable[failed] = RuleCalls([(rule, ctx) for rule, ctx in self.pairs
                                                          if type(rule).precondition not in skipped])
        return chosen


class RuleCalls:
    """Rules with their contexts, in order, and each rule's bound ``check`` beside its context:
    ``run`` calls them all without a Python loop per rule."""

    def __init__(self, pairs: list[tuple[Rule, RuleContext]]) -> None:
        self.pairs = pairs
        self.checks = tuple(rule.check for rule, _ in pairs)
        self.contexts = tuple(ctx for _, ctx in pairs)
        self.superseded = superseded_by(rule for rule, _ in pairs)

    def run(self, cfg: EffectiveConfig, findings: list[Finding], notes: list[str]) -> None:
        """Each rule's findings on ``cfg`` appended to ``findings`` in rule order. A rule that
        raises adds a message to ``notes`` instead (the engine reports it as an error: a crash
        must never turn a failing run into a passing one) and the others still run: then the rules are run again
        one by one (they only read ``cfg``), the findings of the first attempt dropped. Of two
        findings of one problem, the more specific rule's is kept (mblint/arbitration.py)."""
        start = len(findings)
        try:
            findings.extend(chain.from_iterable(filter(None, map(_call, self.checks, repeat(cfg), self.contexts))))
        except Exception:  # noqa: BLE001 - see the loop below
            del findings[start:]
            self.run_one_by_one(cfg, findings, notes)
        if self.superseded:
            findings[start:] = most_specific(findings[start:], self.superseded)

    def run_one_by_one(self, cfg: EffectiveConfig, findings: list[Finding], notes: list[str],
                       reads: list | None = None, readers: dict | None = None) -> None:
        """As ``run`` without arbitration, one rule at a time. With ``reads`` (a list the
        configuration's reads append to) and ``readers``: each read a rule made, the rule's id
        in ``readers[read]``."""
        add_findings = findings.extend
        for rule, ctx in self.pairs:
            if reads is not None:
                reads.clear()
            try:
                add_findings(rule.check(cfg, ctx) or ())
            except Exception as error:  # noqa: BLE001 - one broken rule must not stop the others
                notes.append(f"internal error in rule {rule.id} on {cfg.recipe.label}: {type(error).__name__}: {error}")
            if reads:
                for read in dict.fromkeys(reads):
                    readers.setdefault(read, []).append(rule.id)
        if reads is not None:
            reads.clear()

    def run_watching(self, cfg: EffectiveConfig, findings: list[Finding], notes: list[str], reads: list,
                     readers: dict) -> None:
        """As ``run``, recording which rule made each read appended to ``reads`` meanwhile."""
        start = len(findings)
        self.run_one_by_one(cfg, findings, notes, reads, readers)
        if self.superseded:
            findings[start:] = most_specific(findings[start:], self.superseded)


def _call_with(function: Callable, *args: Any) -> Any:
    return function(*args)


_call = getattr(operator, "call", _call_with)  # operator.call is new in Python 3.11


def _definitely_false(precondition: Callable[[EffectiveConfig], bool], cfg: EffectiveConfig) -> bool:
    """False when the precondition raises: its rules then run and report their own error."""
    try:
        return precondition(cfg) is False
    except Exception:  # noqa: BLE001
        return False
