"""discover -> extract -> resolve -> rules -> findings."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

from mblint.discover import discover
from mblint.extract.modules import SourceError
from mblint.findings import Finding, Severity
from mblint.model import EffectiveConfig, Origin
from mblint.plugins import LoadedPlugins, load_plugins
from mblint.rule import Rule, RuleContext

WORLD_SIZE_COMMENT = re.compile(r"#\s*mblint:\s*world[-_]size\s*=\s*(\d+)")
WORLD_SIZE_NAME = re.compile(r"_(\d+)gpus?_")


class SyntaxErrorRule(Rule):
    id = "SY001"
    name = "syntax-error"
    severity = Severity.ERROR
    summary = "A file mblint must read cannot be parsed (Python, YAML, encoding or binary content)."
    doc = """## What it does
Reports a Python or YAML file that cannot be read or parsed, at the position of the problem.

## Why it matters
Nothing in the file can be checked, and Megatron-Bridge would fail on it too.

## Example
`cfg.train.micro_batch_size = = 1`

## Fix
Correct the syntax. No automatic fix.

## Versions
All.

## Sources
Python's parser; ruamel.yaml.
"""


class ResolverLimitRule(Rule):
    id = "SY002"
    name = "resolver-limit"
    severity = Severity.INFO
    summary = "mblint stopped interpreting a recipe (step, depth or recursion limit); its values are unknown."
    doc = """## What it does
Says that a recipe was too large, too deep or recursive to interpret within mblint's bounds.

## Why it matters
The affected values are unknown, so rules say nothing about them.

## Example
A helper that calls itself without end.

## Fix
None needed; simplify the recipe if you want it checked.

## Versions
All.

## Sources
mblint's interpreter limits.
"""


from mblint.suppress import SUPPRESSION_RULES  # noqa: E402 - SY003/SY004 live beside their logic

ENGINE_RULES: tuple[type[Rule], ...] = (SyntaxErrorRule, ResolverLimitRule) + SUPPRESSION_RULES


@dataclass
class CheckOptions:
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    world_size: int | None = None
    version: str | None = None
    search_paths: tuple[Path, ...] = ()
    recipe: str | None = None
    dotlist: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    settings: Any = None  # mblint.settings.SettingsResolver; None: no settings files
    force_exclude: bool = True  # excludes apply to explicitly passed files too


@dataclass
class FileError:
    path: str
    message: str
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        where = f":{self.line}:{self.column}" if self.line else ""
        return f"{self.path}{where}: {self.message}"


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    files: int = 0
    recipes: int = 0
    resolved: int = 0
    configs: list[EffectiveConfig] = field(default_factory=list)
    suppressed: int = 0  # findings dropped by suppression comments and per-file-ignores
    baselined: int = 0  # findings dropped because the baseline holds them
    stale_baseline: list = field(default_factory=list)  # mblint.baseline.StaleEntry
    rules: list = field(default_factory=list)  # every rule enabled for some checked file
    checked: list[str] = field(default_factory=list)  # display paths of the checked files


def select_rules(rules: Iterable[type[Rule]], select: tuple[str, ...], ignore: tuple[str, ...],
                 extend_select: tuple[str, ...] = ()) -> list[type[Rule]]:
    def matches(rule: type[Rule], selectors: tuple[str, ...]) -> bool:
        return any(s == "ALL" or rule.id.startswith(s) or rule.name == s for s in selectors)

    chosen = []
    for rule in rules:
        selected = matches(rule, select) if select else True
        if extend_select and matches(rule, extend_select):
            selected = True
        if selected and not matches(rule, ignore):
            chosen.append(rule)
    return chosen


class Engine:
    def __init__(self, options: CheckOptions, plugins: LoadedPlugins | None = None) -> None:
        from mblint.resolve import Project

        self.options = options
        self.plugins = plugins or load_plugins()
        self.all_rules = list(ENGINE_RULES) + list(self.plugins.rules)
        self.rules = select_rules(self.all_rules, options.select, options.ignore, options.extend_select)
        self.base_rules = self.rules
        self.project = Project(list(options.search_paths), options.version)
        self.editable: set[str] = set()
        self.used_rules: set = set()
        self._rules_cache: dict = {}

    # ----- settings (per file) -------------------------------------------------------------

    def settings_for(self, path: Path):
        resolver = self.options.settings
        return resolver.for_path(path) if resolver is not None else None

    def rules_for(self, path: Path) -> list[type[Rule]]:
        settings = self.settings_for(path)
        if settings is None:
            return self.base_rules
        if settings not in self._rules_cache:
            opts = self.options
            self._rules_cache[settings] = select_rules(
                self.all_rules, opts.select or settings.select or (), settings.ignore + opts.ignore,
                settings.extend_select + opts.extend_select)
        return self._rules_cache[settings]

    def enter_file(self, path: Path) -> None:
        """Apply the settings in force for ``path``: rules, schema line, import roots."""
        settings = self.settings_for(path)
        self.rules = self.rules_for(path)
        self.used_rules.update(self.rules)
        if settings is None:
            return
        if not self.options.version:
            self.project.version = settings.version
        for extra in settings.resolved_search_paths():
            if extra not in self.project.search_paths:
                self.project.search_paths.append(extra)

    def excluded_by_settings(self, path: Path, explicit: bool) -> bool:
        if explicit and not self.options.force_exclude:
            return False
        settings = self.settings_for(path)
        return settings is not None and settings.is_excluded(path)

    def rule_enabled(self, rule: type[Rule]) -> bool:
        return rule in self.rules

    def check_paths(self, paths: list[str]) -> Report:
        report = Report()
        report.notes.extend(self.plugins.errors)
        found = discover(paths, self.options.excludes, self.options.force_exclude)
        explicit = {Path(p).resolve() for p in paths if Path(p).is_file()}
        found.python = [p for p in found.python if not self.excluded_by_settings(p, p.resolve() in explicit)]
        found.yaml = [p for p in found.yaml if not self.excluded_by_settings(p, p.resolve() in explicit)]
        for missing in found.missing:
            report.errors.append(FileError(missing, "no such file or directory"))
        report.notes.extend(found.problems)
        self.editable = {self.project_display(p) for p in found.python + found.yaml}
        for path in found.python:
            self.check_python(path, report)
        for path in found.yaml:
            self.check_yaml(path, report)
        report.files = len(found.python) + len(found.yaml)
        report.findings = _dedupe(report.findings)
        from mblint.suppress import apply_suppressions

        checked = found.python + found.yaml
        report.checked = [self.project_display(p) for p in checked]
        apply_suppressions(self, report, checked)
        report.rules = sorted(self.used_rules or self.base_rules, key=lambda r: r.id)
        report.findings.sort(key=Finding.sort_key)
        return report

    def project_display(self, path: Path) -> str:
        from mblint.extract.modules import ModuleFinder

        return ModuleFinder([], self.project.display_root).display(path)

    # ----- python ------------------------------------------------------------------------

    def check_python(self, path: Path, report: Report) -> None:
        self.enter_file(path)
        try:
            functions = self.project.recipe_functions(path)
        except SourceError as error:
            self.syntax_finding(error, report)
            return
        text = self.project.interpreter_for(path).finder.load(path).text
        for node in functions:
            report.recipes += 1
            self.check_recipe(path, node.name, text, report, dotlist=self.options.dotlist)

    def check_recipe(self, path: Path, function: str, text: str, report: Report,
                     overrides: Iterable = (), dotlist: tuple[str, ...] = ()) -> EffectiveConfig | None:
        from mblint.overrides import apply_dotlist, apply_yaml_file

        try:
            graph = self.project.resolve_graph(path, function)
        except SourceError as error:
            self.syntax_finding(error, report)
            return None
        except LookupError as error:
            report.errors.append(FileError(str(path), str(error)))
            return None
        interp = self.project.interpreter_for(path)
        self.report_limits(interp.notes, path, function, report)
        if graph is None:
            return None
        for override in overrides:
            apply_yaml_file(graph, override)
        if dotlist:
            apply_dotlist(graph, list(dotlist))
        cfg = graph.build()
        report.resolved += 1
        self.run_rules(cfg, text, report)
        return cfg

    def run_rules(self, cfg: EffectiveConfig, text: str, report: Report) -> None:
        world_size, source = self.world_size_for(cfg, text)
        for rule_class in self.rules:
            if rule_class in ENGINE_RULES or not rule_class.applies_to(cfg.schema_version):
                continue
            rule = rule_class()
            ctx = RuleContext(rule, world_size, source, editable_paths=frozenset(self.editable))
            try:
                for finding in rule.check(cfg, ctx) or ():
                    report.findings.append(finding)
            except Exception as error:  # noqa: BLE001 - one broken rule must not stop the others
                report.notes.append(f"internal error in rule {rule_class.id} on {cfg.recipe.label}: {type(error).__name__}: {error}")

    def world_size_for(self, cfg: EffectiveConfig, text: str) -> tuple[int | None, str]:
        if self.options.world_size:
            return self.options.world_size, "option"
        settings = self.settings_for(self.project.display_root / cfg.recipe.path)
        if settings is not None and settings.world_size:
            return settings.world_size, "setting"
        match = WORLD_SIZE_COMMENT.search(text)
        if match:
            return int(match.group(1)), "comment"
        match = WORLD_SIZE_NAME.search(f"_{cfg.recipe.function}_")
        if match:
            return int(match.group(1)), "name"
        return None, ""

    def report_limits(self, notes: list[str], path: Path, function: str, report: Report) -> None:
        limited = [n for n in notes if "limit" in n or "unresolved" in n or "too deep" in n]
        if limited and self.rule_enabled(ResolverLimitRule):
            origin = Origin(self.project_display(path), 1, 1, 1, 1)
            report.findings.append(Finding(ResolverLimitRule.id, ResolverLimitRule.name, ResolverLimitRule.severity,
                                           f"{function}: {limited[0]}", origin, recipe=f"{origin.path}::{function}"))

    def syntax_finding(self, error: SourceError, report: Report) -> None:
        if not self.rule_enabled(SyntaxErrorRule):
            return
        display = self.project_display(error.path)
        origin = Origin(display, error.line, error.column, error.line, error.column + 1)
        report.findings.append(Finding(SyntaxErrorRule.id, SyntaxErrorRule.name, Severity.ERROR, error.message, origin))

    # ----- yaml --------------------------------------------------------------------------

    def check_yaml(self, path: Path, report: Report) -> None:
        from mblint.overrides import load_yaml, recipe_pairing

        self.enter_file(path)
        settings = self.settings_for(path)
        pairing = self.options.recipe or recipe_pairing(path) or (settings.pairing_for(path) if settings else None)
        if pairing is None:
            return
        try:
            load_yaml(path)
        except SourceError as error:
            self.syntax_finding(error, report)
            return
        target = self.find_recipe(pairing, path)
        if target is None:
            report.errors.append(FileError(str(path), f"paired recipe {pairing!r} not found"))
            return
        recipe_path, function = target
        try:
            text = self.project.interpreter_for(recipe_path).finder.load(recipe_path).text
        except SourceError as error:
            self.syntax_finding(error, report)
            return
        self.check_recipe(recipe_path, function, text, report, overrides=[path], dotlist=self.options.dotlist)

    def find_recipe(self, pairing: str, near: Path) -> tuple[Path, str] | None:
        if "::" not in pairing:
            return None
        where, function = pairing.rsplit("::", 1)
        candidates = [Path(where), near.parent / where]
        for candidate in candidates:
            if candidate.is_file():
                return candidate, function
        interp = self.project.interpreter_for(near)
        found = interp.finder.find(where)
        return (found, function) if found else None


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    unique = []
    for finding in findings:
        key = finding.identity()
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique
