"""discover -> extract -> resolve -> rules -> findings."""

from __future__ import annotations

import ast
import gc
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from mblint.discover import YAML_SUFFIXES, discover
from mblint.extract.modules import OUTSIDE_PROJECT, SourceError, SourceLimit
from mblint.findings import TRANSFER_REDUCERS, Finding, Severity
from mblint.hf_config import HF_CONFIG_MISSING, HF_CONFIG_UNUSABLE, unusable_config_notes
from mblint.schema import load_schema
from mblint.model import EffectiveConfig, Origin
from mblint.paths import Confinement, confinement_for
from mblint.results import FileError, FileResult, Report
from mblint.rule import Rule, RuleContext, RulePlan
from mblint.suggestions import MAX_SUGGESTED, nearest_names
from mblint.suppress import SUPPRESSION_RULES, apply_suppressions

if TYPE_CHECKING:
    from mblint.plugins import LoadedPlugins

WORLD_SIZE_COMMENT = r"#\s*mblint:\s*world[-_]size\s*=\s*(\d+)"  # compiled by re when a file mentions mblint
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


class UnreachableRecipeCodeRule(Rule):
    id = "SY006"
    name = "unreachable-recipe-code"
    severity = Severity.WARNING
    summary = "Statements after a return (or raise) in a recipe function never run; their settings have no effect."
    doc = """## What it does
Reports the first statement that follows a `return` or `raise` in the same block of a recipe
function (the function's body, or the body of an `if`/`for`/`with`/`try` inside it).

## Why it matters
Python never runs them, so whatever they set (a mixed-precision recipe, a parallel size) is not
part of the configuration the recipe returns; mblint, like Python, ignores them. A shipped
Megatron-Bridge 0.6.2 recipe sets its mixed precision after `return cfg`.

## Example
```python
def my_recipe_config():
    cfg = _pretrain_common()
    return cfg
    cfg.mixed_precision = "bf16_mixed"   # never runs
```

## Fix
Move the statements above the `return`, or delete them. Not automatic.

## Versions
All.

## Sources
The Python language reference (a `return` leaves the function); 0.6.2
megatron/bridge/recipes/ (a recipe with statements after `return cfg`).
"""
    valid = ["cfg = _pretrain_common()"]
    invalid = ["cfg = _pretrain_common()\nreturn cfg\ncfg.train.micro_batch_size = 2  # error"]


# statements holding blocks of the same code (a nested def or class is code of its own)
_BLOCK_STATEMENTS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
                     *([ast.TryStar] if hasattr(ast, "TryStar") else []))


def unreachable_statements(function: ast.FunctionDef) -> list[ast.stmt]:
    """The first statement after a ``return``/``raise`` in each block of ``function`` (nested
    functions and classes are their own code and are not entered)."""
    found: list[ast.stmt] = []
    blocks = [function.body]
    while blocks:
        block = blocks.pop()
        for index, stmt in enumerate(block):
            if isinstance(stmt, (ast.Return, ast.Raise)) and index + 1 < len(block):
                found.append(block[index + 1])
                break
            if isinstance(stmt, _BLOCK_STATEMENTS):
                blocks.extend(inner for inner in (stmt.body, getattr(stmt, "orelse", None),
                                                  getattr(stmt, "finalbody", None)) if inner)
                blocks.extend(handler.body for handler in getattr(stmt, "handlers", ()))
    return sorted(found, key=lambda stmt: (stmt.lineno, stmt.col_offset))


class NotAnalysedRule(Rule):
    id = "SY005"
    name = "not-analysed"
    severity = Severity.WARNING
    summary = "A configuration mblint was given could not be analysed (an unpaired override file, a recipe it cannot read)."
    doc = """## What it does
Reports a configuration that mblint was asked to lint but could not analyse, and says how to
make it analysable:

- a YAML file that looks like a Megatron-Bridge override file (its top-level keys are sections
  of `ConfigContainer`: `train`, `model`, ...) but is paired with no recipe;
- a recipe whose configuration comes from an import mblint could not read (Megatron-Bridge
  not on the path of the interpreter running mblint, as under pre-commit);
- a builder called only from an `if __name__ == "__main__":` block, which mblint never runs.

## Why it matters
A file nobody checked must not pass as checked: without this finding, a pre-commit hook that
resolves nothing would report success.

## Example
`conf/finetune.yaml` holding `train: {micro_batch_size: 2}` with no pairing.

## Fix
Pair the override file (`# mblint: recipe=recipes/llama.py::llama3_8b_sft_config`, `pairing`
in settings, or `--recipe`); give the folder holding Megatron-Bridge's `megatron/` with
`--search-path` or `search-paths`. No automatic fix. Ignore the rule (`ignore = ["SY005"]`) to
accept that these files are not checked.

## Versions
All.

## Sources
mblint's pairing and import resolution.
"""


from mblint.launch import LAUNCH_RULES  # noqa: E402 - LA001/LA002 live beside the launch reader

ENGINE_RULES: tuple[type[Rule], ...] = (
    (SyntaxErrorRule, ResolverLimitRule, NotAnalysedRule, UnreachableRecipeCodeRule) + SUPPRESSION_RULES
    + LAUNCH_RULES)


@dataclass(eq=False, repr=False)
class CheckOptions:
    """What a run was asked for (command-line options and the settings resolver)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    world_size: int | None = None
    version: str | None = None
    search_paths: tuple[Path, ...] = ()
    recipe: str | None = None
    dotlist: tuple[str, ...] = ()
    excludes: tuple[str, ...] = ()
    use_cache: bool = False
    cache_root: Path | None = None
    cache_dir: Path | None = None  # --cache-dir: the cache's folder instead of <root>/.mblint_cache
    jobs: int | None = None  # None: decide from the amount of work
    settings: Any = None  # mblint.settings.SettingsResolver; None: no settings files
    force_exclude: bool = True  # excludes apply to explicitly passed files too
    recipe_function: str | None = None  # check only this function of the Python files (--recipe without paths)
    schema_source: str = "auto"  # "bundled": never derive the schema from a Megatron-Bridge source at hand


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


def selector_problem(where: str, selectors: Iterable[str], rules: Iterable[type[Rule]]) -> str | None:
    """What is wrong with ``selectors`` (rule ids, id prefixes, names, ALL) given at ``where``,
    with a did-you-mean for each that selects no rule; None when every one selects some rule."""
    rules = list(rules)
    problems = []
    unknown = [selector for selector in selectors
               if selector != "ALL" and not any(rule.id.startswith(selector) or rule.name == selector for rule in rules)]
    for selector in unknown[:MAX_SUGGESTED]:
        close = nearest_names(selector, [rule.id for rule in rules] + [rule.name for rule in rules])
        prefixes = ", ".join(sorted({rule.id.rstrip("0123456789") for rule in rules}))
        hint = (f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close
                else f" (rule ids begin with {prefixes}; see `mblint rules`)")
        problems.append(f"{selector!r} selects no rule{hint}")
    if len(unknown) > MAX_SUGGESTED:
        problems.append(f"and {len(unknown) - MAX_SUGGESTED:,} more selectors select no rule")
    return f"{where}: {'; '.join(problems)}" if problems else None


class Engine:
    def __init__(self, options: CheckOptions, plugins: "LoadedPlugins | None" = None) -> None:
        self.options = options
        self.display_root = Path.cwd()
        self._project = None
        self.editable: set[str] = set()
        self.used_rules: set = set()
        self._world_size_comments: dict[str, int | None] = {}
        self._world_sizes: dict[tuple, tuple[int | None, str]] = {}
        self.settings_errors: set[str] = set()
        self.directive_free: set[str] = set()  # display paths whose text never mentions "mblint"
        self._settings_by_display: dict = {}
        self._settings_memo: dict = {}
        self._displays: dict = {}  # path -> display, for _displays_root and _displays_cwd
        self._displays_root = self._displays_cwd = None
        self._plugins = None
        self._known_sizes: dict[Path, int] = {}  # bytes per file, as discovery found them
        self._known_link_modes: dict[Path, int] = {}  # os.lstat modes of the paths given, as discovery found them
        self._run_cwd: str | None = None  # the working folder, asked once per run
        self.catalogued_rules = False  # rules are catalog stand-ins (mblint.catalog), not classes
        # What may be read: the project of the working folder, the search paths and the
        # installations of Megatron-Bridge; check_paths adds the projects of the paths it is given.
        self.confinement: Confinement = confinement_for([], options.search_paths)
        self.confinement_errors: set[tuple[str, str]] = set()  # (settings file, message)
        if plugins is not None or not options.use_cache:
            self.use_plugins(plugins)
        # else: with a cache, the plugins come from the catalog when possible (make_cache)

    # ----- rules ---------------------------------------------------------------------------

    def use_plugins(self, plugins: "LoadedPlugins | None", catalogued: bool = False) -> None:
        if plugins is None:
            from mblint.plugins import load_plugins

            plugins = load_plugins()
        self._plugins = plugins
        self.catalogued_rules = catalogued
        self._all_rules = list(ENGINE_RULES) + list(plugins.rules)
        options = self.options
        for option, selectors in (("--select", options.select), ("--extend-select", options.extend_select),
                                  ("--ignore", options.ignore)):
            problem = selector_problem(option, selectors, self._all_rules)
            if problem:
                from mblint.settings import SettingsError

                raise SettingsError(problem)
        self._base_rules = select_rules(self._all_rules, options.select, options.ignore, options.extend_select)
        self._rules = self._base_rules
        self._rules_cache: dict = {}
        self._config_rules: dict = {}  # tuple of enabled rules -> plans by configuration kind
        self._plans_rules: list | None = None
        self._plans: dict = {}

    def load_rule_classes(self) -> None:
        """The real rule classes, before any file is checked."""
        if self._plugins is None or self.catalogued_rules:
            self.use_plugins(None)

    def _ensure_plugins(self) -> None:
        if self._plugins is None:
            self.use_plugins(None)

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

    # ----- settings (per file) -------------------------------------------------------------

    def settings_for(self, path: Path):
        """The settings in force for ``path``; None when there are none or they cannot be read
        (the error is reported once, and the files they govern are not checked)."""
        return self._settings_lookup(path)[0]

    def settings_for_display(self, display: str):
        """``settings_for`` of a path as findings show it (relative to the display root);
        asked for every finding, so answered by string from memory."""
        key = (self.display_root, display)
        memo = self._settings_by_display
        if key not in memo:
            memo[key] = self.settings_for(self.display_root / display)
        return memo[key]

    def settings_readable(self, path: Path) -> bool:
        return self._settings_lookup(path)[1]

    def _settings_lookup(self, path: Path) -> tuple:
        """(settings or None, readable), asked many times per file; kept per path as given
        (the working folder of a run is fixed: display paths are relative to it too)."""
        found = self._settings_memo.get(path)
        if found is None:
            found = self._settings_memo[path] = self._settings_uncached(path)
        return found

    def _settings_uncached(self, path: Path) -> tuple:
        resolver = self.options.settings
        if resolver is None:
            return None, True
        from mblint.settings import SettingsError

        try:
            return resolver.for_path(path, self._run_cwd, self._known_link_modes.get(path)), True
        except SettingsError as error:
            self.settings_errors.add(str(error))
            return None, False

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
            if not self.confinement.allows(extra):
                self.confinement_errors.add((str(settings.source), f"search path {extra} is outside the "
                                                                   "project: not searched"))
            elif extra not in self.project.search_paths:
                self.project.search_paths.append(extra)
        for folder in settings.resolved_hf_config_paths():
            if not self.confinement.allows(folder):
                self.confinement_errors.add((str(settings.source), f"hf-config-paths folder {folder} is outside the "
                                                                   "project: not read"))
            elif folder not in self.project.hf_config_folders:
                self.project.hf_config_folders.append(folder)

    def excluded_by_settings(self, path: Path, explicit: "_ExplicitFiles") -> bool:
        settings = self.settings_for(path)
        if settings is None or not settings.exclude:
            return False
        if not self.options.force_exclude and path in explicit:
            return False
        return settings.is_excluded(path)

    @property
    def project(self):
        """The resolver, imported and built on first use: a fully cached run never needs it."""
        if self._project is None:
            from mblint.resolve import Project

            self._project = Project(list(self.options.search_paths), self.options.version, self.display_root,
                                    self.confinement)
            self._project.schema_source = self.options.schema_source
            self._project.schema_cache = self.schema_cache_folder()
        self._project.display_root = self.display_root
        self._project.real_paths.cwd = self._run_cwd
        return self._project

    def schema_cache_folder(self) -> Path:
        """Where schemas derived from a Megatron-Bridge source are kept: beside the result cache
        (kept also with --no-cache, which is about results)."""
        from mblint import cache

        root = self.options.cache_root or cache.project_root(self.display_root)
        return cache.cache_folder(root, self.options.cache_dir) / "schema"

    def rule_enabled(self, rule: type[Rule]) -> bool:
        return rule in self.rules

    def check_paths(self, paths: list[str]) -> Report:
        """Lint ``paths``. The cyclic garbage collector is paused meanwhile: the run allocates
        millions of small acyclic objects (tuples, AST nodes) that reference counting frees, and
        the collector's rescans of them cost a third of the time."""
        was_enabled = gc.isenabled()
        gc.disable()
        self._run_cwd = os.getcwd()  # fixed during a run; in-process callers may change it between runs
        try:
            return self._check_paths(paths)
        finally:
            self._run_cwd = None
            if was_enabled:
                gc.enable()

    def _check_paths(self, paths: list[str]) -> Report:
        report = Report()
        self.confinement.roots = confinement_for(paths, self.options.search_paths, self._run_cwd).roots
        report.confinement = self.confinement
        found = discover(paths, self.options.excludes, self.options.force_exclude, self._run_cwd)
        self._known_sizes = found.sizes
        self._known_link_modes = found.link_modes
        explicit = _ExplicitFiles(paths)
        found.python = [p for p in found.python if self.settings_readable(p)]
        found.yaml = [p for p in found.yaml if self.settings_readable(p)]
        found.python = [p for p in found.python if not self.excluded_by_settings(p, explicit)]
        found.yaml = [p for p in found.yaml if not self.excluded_by_settings(p, explicit)]
        found.scripts = [p for p in found.scripts if self.settings_readable(p) and not self.excluded_by_settings(p, explicit)]
        for missing in found.missing:
            report.errors.append(FileError(missing, "no such file or directory"))
        report.notes.extend(found.problems)
        for path, reason in found.unreadable:
            result = FileResult()
            self.syntax_finding(SourceError(path, reason), result)
            report.add(result)
        files = found.python + found.yaml + found.scripts
        displays = [self.project_display(p) for p in files]
        self.editable = set(displays)
        cache = self.make_cache()  # before the plugins are first needed: they may come from its catalog
        report.errors[0:0] = [FileError("mblint", error) for error in self.plugins.errors]  # a rule pack not loaded
        files = self.with_valid_selectors(files)
        displays = [self.project_display(p) for p in files]
        self.editable = set(displays)
        pending = []
        seen: set = set()  # identities of the cached findings, which are reported first
        for path in files:
            cached = cache.get(path, self.settings_source(path)) if cache else None
            if cached is not None:
                result = _decoded(cached, seen)
                if result is None:  # a damaged entry: checked again, and the entry rewritten
                    cache.miss()
                    pending.append(path)
                    continue
                report.add(result)
                if result.directive_free:
                    self.directive_free.add(self.project_display(path))
            else:
                pending.append(path)
        for path, result, deps in self.check_files(pending):
            report.add(result)
            if result.directive_free:
                self.directive_free.add(self.project_display(path))
            if cache is not None and not result.errors:
                cache.put(path, deps, result.to_dict(), self.settings_source(path))
        report.files = len(files)
        report.cache_hits = cache.hits if cache else 0
        report.findings = _one_per_problem_and_place(_dedupe(report.findings))

        report.checked = displays
        report.notes.extend(dict.fromkeys(schema["note"] for schema in report.schemas if schema.get("note")))
        summarise_missing_hf_configs(report)
        apply_suppressions(self, report, files)
        report.rules = sorted(self.used_rules or self.base_rules, key=lambda r: r.id)
        for message in sorted(self.settings_errors):
            report.errors.append(FileError(message, "the files these settings govern are not checked"))
        report.errors.extend(FileError(source, message) for source, message in sorted(self.confinement_errors))
        report.findings.sort(key=Finding.sort_key)
        return report

    def with_valid_selectors(self, files: list[Path]) -> list[Path]:
        """``files`` less those whose settings name a rule selector that selects no rule (the
        settings error is reported, exit code 2)."""
        problems: dict = {}
        for path in files:
            settings = self.settings_for(path)
            if settings is not None and settings not in problems:
                selectors = [*(settings.select or ()), *settings.extend_select, *settings.ignore,
                             *(s for _, ids in settings.per_file_ignores for s in ids)]
                problems[settings] = selector_problem(str(settings.source or "settings"), selectors, self.all_rules)
                if problems[settings]:
                    self.settings_errors.add(problems[settings])
        return [path for path in files if problems.get(self.settings_for(path)) is None]

    def editable_frozen(self) -> frozenset[str]:
        if getattr(self, "_editable_frozen", None) is None or self._editable_frozen[0] is not self.editable:
            self._editable_frozen = (self.editable, frozenset(self.editable))
        return self._editable_frozen[1]

    def settings_source(self, path: Path) -> str:
        settings = self.settings_for(path)
        return str(settings.source) if settings is not None and settings.source is not None else ""

    def make_cache(self):
        if not self.options.use_cache:
            return None
        from mblint import cache

        root = self.options.cache_root or cache.project_root(self.display_root)
        folder = cache.cache_folder(root, self.options.cache_dir)
        fingerprint = self.rules_fingerprint(folder)
        options = {k: v for k, v in vars(self.options).items()
                   if k not in ("use_cache", "cache_root", "cache_dir", "jobs", "settings")}
        resolver = self.options.settings
        if resolver is not None:
            options["settings"] = {"config": str(resolver.config), "isolated": resolver.isolated}
        key = cache.settings_key({"options": options, "rules": fingerprint,
                                  "plugins": self.plugins.versions, "cwd": str(self.display_root)})
        return cache.ResultCache(folder, key)

    def rules_fingerprint(self, folder: Path) -> str:
        """Of every rule: the engine's own, and the plugins' from the plugin catalog in
        ``folder`` when it is current (then no rule pack is imported unless a file must be
        checked), else from the loaded rule classes."""
        from mblint import cache, catalog

        engine_rules = cache.rules_fingerprint(list(ENGINE_RULES))
        if self._plugins is None:
            catalogued = catalog.load_catalog(folder)
            if catalogued is not None:
                self.use_plugins(catalogued, catalogued=True)
                return engine_rules + catalogued.fingerprint
            self.use_plugins(None)
            plugin_rules = cache.rules_fingerprint(self.plugins.rules)
            catalog.save_catalog(folder, self.plugins, plugin_rules)
            return engine_rules + plugin_rules
        if self.catalogued_rules:
            return engine_rules + self.plugins.fingerprint
        return engine_rules + cache.rules_fingerprint(self.plugins.rules)

    def check_files(self, paths: list[Path]):
        """(path, FileResult, dependencies) for each file, in worker processes when there is
        enough work to pay for them."""
        if paths:
            self.load_rule_classes()
        known = self._known_sizes
        sizes = {path: known[path] if path in known else _size(path) for path in paths} if self.options.jobs != 1 else {}
        jobs = self.options.jobs if self.options.jobs is not None else _default_jobs(sizes)
        units = _work_groups(paths, jobs, sizes) if jobs > 1 else []
        if len(units) <= 1:
            for path in paths:
                yield (path, *self.check_file_guarded(path))
            return
        yield from _check_in_workers(self, paths, units, min(jobs, len(units)))

    def prepare_resolver(self, paths: list[Path]) -> None:
        """Before the workers are forked: import the resolver and load the schema that the
        first recipe file reads under its settings, which every worker would otherwise do
        again for itself (each file's check applies its own settings again)."""
        first = next((path for path in paths if path.suffix == ".py"), None)
        if first is not None:
            try:
                self.enter_file(first)
                self.project.interpreter_for(first)
            except Exception:  # noqa: BLE001 - the file's own check reports what is wrong
                pass

    def check_file_guarded(self, path: Path) -> tuple[FileResult, set[Path]]:
        """``check_file``, with a failure of mblint itself reported as an error (exit code 2)
        naming the file; the other files are still linted."""
        try:
            return self.check_file(path)
        except Exception as error:  # noqa: BLE001 - the last line of defence
            result = FileResult()
            result.errors.append(FileError(str(path), f"internal error while linting this file: "
                                                      f"{type(error).__name__}: {error}"))
            return result, set()

    def check_file(self, path: Path) -> tuple[FileResult, set[Path]]:
        self.load_rule_classes()
        result = FileResult()
        if path.suffix == ".py":
            self.check_python(path, result)
            deps = self._deps(path) if self.options.use_cache else set()  # they only key the cache
        elif path.suffix in YAML_SUFFIXES:
            deps = self.check_yaml(path, result)
        else:
            deps = self.launch_checker().check(path, result)
        settings = self.settings_for(path)
        if settings is not None and settings.source is not None:
            deps = deps | {Path(settings.source)}
        result.directive_free = self._directive_free(path)
        # The recipes of a file often report the same finding (a helper they share): the report
        # keeps the first of each anyway, and the others need not be encoded, sent and decoded.
        result.findings = _dedupe(result.findings)
        return result, deps

    def _directive_free(self, path: Path) -> bool:
        """No "mblint" in the file's text; a Python file's text is the one already read."""
        if path.suffix == ".py":
            try:
                return not self.project.interpreter_for(path).finder.load(path).mblint_text
            except SourceError:
                return False
        return _directive_free(path)

    def _deps(self, path: Path) -> set[Path]:
        try:
            interp = self.project.interpreter_for(path)
            deps = interp.dependencies(interp.finder.real_paths.of(path))
            return deps | {Path(p) for p in interp.schema.source_files} if interp.schema.source_files else deps
        except Exception:  # noqa: BLE001 - deps only decide caching
            return set()

    def project_display(self, path: Path) -> str:
        """How findings name ``path``; asked several times per checked file."""
        root, cwd = self.display_root, self._run_cwd or os.getcwd()
        if root is not self._displays_root or cwd != self._displays_cwd:  # answers made for others
            self._displays, self._displays_root, self._displays_cwd = {}, root, cwd
        display = self._displays.get(path)
        if display is None:
            from mblint.extract.modules import display_path

            display = self._displays[path] = display_path(path, root, cwd)
        return display

    # ----- python ------------------------------------------------------------------------

    def check_python(self, path: Path, report: FileResult) -> None:
        self.enter_file(path)
        try:
            functions = self.project.recipe_functions(path)
        except SourceError as error:
            self.syntax_finding(error, report)
            return
        from mblint.extract.limits import MAX_FILE_STEPS, MAX_RECIPES_PER_FILE

        interp = self.project.interpreter_for(path)
        text = interp.finder.load(path).mblint_text
        report.schemas.append(self.project.schema_record(path))
        if self.options.recipe_function:
            report.recipes += 1
            self.check_recipe(path, self.options.recipe_function, text, report, dotlist=self.options.dotlist)
            return
        steps = 0
        analysed: set[str] = set()
        for index, node in enumerate(functions):
            if index == MAX_RECIPES_PER_FILE or steps > MAX_FILE_STEPS:
                limit = (f"recipe limit ({MAX_RECIPES_PER_FILE} per file)" if index == MAX_RECIPES_PER_FILE
                         else f"step limit ({MAX_FILE_STEPS:,} steps per file)")
                self.limit_finding(path, node, f"{limit} reached: {len(functions) - index} recipes from "
                                               f"{node.name} on are not checked", report)
                return
            report.recipes += 1
            self.report_unreachable(path, node, report)
            if self.check_recipe(path, node.name, text, report, dotlist=self.options.dotlist) is not None:
                analysed.add(node.name)
            steps += interp.steps
        self.report_main_only_calls(path, analysed, report)

    def check_recipe(self, path: Path, function: str, text: str, report: FileResult,
                     overrides: Iterable = (), dotlist: tuple[str, ...] = ()) -> EffectiveConfig | None:
        try:
            graph = self.project.resolve_graph(path, function)
        except SourceError as error:
            self.syntax_finding(error, report)
            return None
        except LookupError:
            report.errors.append(FileError(self.project_display(path), f"paired recipe function {function!r} not found"))
            return None
        interp = self.project.interpreter_for(path)
        self.report_limits(interp.limits, path, function, report)
        if graph is None:
            if not interp.limits:
                self.explain_unresolved(path, function, report)
            return None
        overrides = tuple(overrides)
        if (overrides or dotlist) and not self.apply_overrides(graph, overrides, dotlist, report):
            return None
        cfg = graph.build()
        report.resolved += 1
        missing = sorted({note[len(HF_CONFIG_MISSING):] for note in cfg.notes if note.startswith(HF_CONFIG_MISSING)})
        if missing:
            report.notes.append(f"{HF_CONFIG_MISSING}{cfg.recipe.label}: {', '.join(missing)}")
        report.notes.extend(sorted({note for note in cfg.notes if note.startswith(HF_CONFIG_UNUSABLE)}))
        self.run_rules(cfg, text, report)
        return cfg

    def apply_overrides(self, graph, overrides: tuple, dotlist: tuple[str, ...], report: FileResult) -> bool:
        """Apply YAML override files, then ``--set`` items, to a recipe's graph; False (and
        the error reported) when one cannot be applied. Imported only for a recipe that has
        overrides: most runs have none."""
        from mblint.overrides import DotlistError, apply_dotlist, apply_yaml_file

        try:
            for override in overrides:
                apply_yaml_file(graph, override)
            if dotlist:
                apply_dotlist(graph, list(dotlist))
        except SourceError as error:
            self.syntax_finding(error, report)
            return False
        except DotlistError as error:
            report.errors.append(FileError("--set", str(error)))
            return False
        return True

    def run_rules(self, cfg: EffectiveConfig, text: str, report: FileResult) -> None:
        world_size, source = self.world_size_for(cfg, text)
        crashes: list[str] = []  # a rule that raised: an error (exit 2), never a passing run
        self.config_rules(cfg.schema_version, world_size, source).calls(cfg).run(cfg, report.findings, crashes)
        report.errors.extend(FileError(cfg.recipe.path, crash) for crash in crashes)

    def config_rules(self, line: str, world_size: int | None, source: str) -> RulePlan:
        """The plan of each enabled rule that checks a configuration of the schema ``line``
        (its key),
        with its context. Rules and contexts hold no state of their own, so they are made once
        per distinct setting instead of once per configuration; the plan skips a rule whose
        precondition is False on a configuration."""
        editable = self.editable_frozen()
        key = (line, world_size, source, editable)
        plans = self._plans_for_rules()
        chosen = plans.get(key)
        if chosen is None:
            chosen = plans[key] = RulePlan([
                (rule, RuleContext(rule, world_size, source, editable_paths=editable))
                for rule in (rule_class() for rule_class in self.rules
                             if rule_class not in ENGINE_RULES and rule_class.applies_to(load_schema(line)))])
        return chosen

    def _plans_for_rules(self) -> dict:
        """The plans made for the list of enabled rules in force (a list per distinct settings,
        assigned per file and never changed in place), by configuration kind."""
        rules = self.rules
        if self._plans_rules is not rules:
            self._plans = self._config_rules.setdefault(tuple(rules), {})
            self._plans_rules = rules
        return self._plans

    def world_size_for(self, cfg: EffectiveConfig, text: str) -> tuple[int | None, str]:
        """The world size rules assume for ``cfg`` and where it came from: the option, the
        settings or comment of the recipe's file, or the function's name; kept per function."""
        key = (self.display_root, cfg.recipe.path, cfg.recipe.function)
        found = self._world_sizes.get(key)
        if found is None:
            found = self._world_sizes[key] = self._world_size_uncached(cfg, text)
        return found

    def _world_size_uncached(self, cfg: EffectiveConfig, text: str) -> tuple[int | None, str]:
        if self.options.world_size:
            return self.options.world_size, "option"
        settings = self.settings_for_display(cfg.recipe.path)
        if settings is not None and settings.world_size:
            return settings.world_size, "setting"
        from_comment = self.world_size_comment(cfg.recipe.path, text)
        if from_comment is not None:
            return from_comment, "comment"
        match = WORLD_SIZE_NAME.search(f"_{cfg.recipe.function}_")
        if match:
            return int(match.group(1)), "name"
        return None, ""

    def world_size_comment(self, recipe_path: str, text: str) -> int | None:
        """The ``# mblint: world-size=N`` comment of the recipe's file (searched once per file)."""
        if recipe_path not in self._world_size_comments:
            match = re.search(WORLD_SIZE_COMMENT, text) if "mblint" in text else None  # else never compiled
            self._world_size_comments[recipe_path] = int(match.group(1)) if match else None
        return self._world_size_comments[recipe_path]

    def explain_unresolved(self, path: Path, function: str, report: FileResult) -> None:
        """SY005 on the ``def`` line of a recipe left unresolved because it uses an import
        mblint could not read (naming the import and how to provide it)."""
        from mblint.unanalysed import unread_imports, unread_message

        node = self._function_node(path, function)
        if node is None:
            return
        interp = self.project.interpreter_for(path)
        tree = interp.finder.load(path).tree
        unread = unread_imports(tree, node, path, interp.finder, interp.schema)
        if unread:
            self.not_analysed_finding(path, node.lineno, node.col_offset + 1, len(f"def {node.name}"),
                                      unread_message(function, unread), report, recipe=function)

    def report_main_only_calls(self, path: Path, analysed: set[str], report: FileResult) -> None:
        """SY005 at each call of a configuration builder that only the module's
        ``if __name__ == "__main__":`` block makes."""
        from mblint.unanalysed import main_only_calls, main_only_message

        tree = self.project.interpreter_for(path).finder.load(path).tree
        for found in main_only_calls(tree, analysed):
            call = found.call
            width = (call.end_col_offset - call.col_offset) if call.end_lineno == call.lineno else len(found.function)
            self.not_analysed_finding(path, call.lineno, call.col_offset + 1, width, main_only_message(found), report)

    def not_analysed_finding(self, path: Path, line: int, column: int, width: int, message: str,
                             report: FileResult, recipe: str | None = None) -> None:
        display = self.project_display(path)
        report.not_analysed.append([display, message])
        if self.rule_enabled(NotAnalysedRule):
            rule = NotAnalysedRule
            origin = Origin(display, line, column, line, column + max(width, 1))
            report.findings.append(Finding(rule.id, rule.name, rule.severity, message, origin,
                                           recipe=f"{display}::{recipe}" if recipe else ""))

    def report_limits(self, limits: list[str], path: Path, function: str, report: FileResult) -> None:
        """One SY002 per recipe that hit a limit, on its ``def`` line, naming the first limit."""
        if not limits:
            return
        node = self._function_node(path, function)
        more = f" (and {len(limits) - 1} more)" if len(limits) > 1 else ""
        self.limit_finding(path, node, f"{function}: {limits[0]}{more}", report, recipe=function)

    def report_unreachable(self, path: Path, node: ast.FunctionDef, report: FileResult) -> None:
        """SY006 on the first statement after a return/raise in each block of a recipe function."""
        if not self.rule_enabled(UnreachableRecipeCodeRule):
            return
        display = self.project_display(path)
        rule = UnreachableRecipeCodeRule
        for stmt in unreachable_statements(node):
            end_line = getattr(stmt, "end_lineno", None) or stmt.lineno
            end_column = (getattr(stmt, "end_col_offset", None) or stmt.col_offset) + 1
            origin = Origin(display, stmt.lineno, stmt.col_offset + 1, end_line, end_column)
            message = (f"{node.name}: this statement (and any after it in its block) follows a return or raise and "
                       f"never runs; what it sets is not part of the configuration")
            report.findings.append(Finding(rule.id, rule.name, rule.severity, message, origin,
                                           recipe=f"{display}::{node.name}"))

    def limit_finding(self, path: Path, node, message: str, report: FileResult, recipe: str | None = None) -> None:
        if not self.rule_enabled(ResolverLimitRule):
            return
        display = self.project_display(path)
        line, column = (node.lineno, node.col_offset + 1) if node is not None else (1, 1)
        end = column + len(f"def {node.name}") if node is not None else column + 1
        origin = Origin(display, line, column, line, end)
        report.findings.append(Finding(ResolverLimitRule.id, ResolverLimitRule.name, ResolverLimitRule.severity,
                                       message, origin, recipe=f"{display}::{recipe}" if recipe else ""))

    def _function_node(self, path: Path, function: str):
        try:
            tree = self.project.interpreter_for(path).finder.load(path).tree
        except SourceError:
            return None
        return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function), None)

    def syntax_finding(self, error: SourceError, report: FileResult) -> None:
        """SY001 for a file that cannot be read or parsed; SY002 when mblint's own limits
        stopped it from reading the file whole."""
        rule = ResolverLimitRule if isinstance(error, SourceLimit) else SyntaxErrorRule
        if not self.rule_enabled(rule):
            return
        display = self.project_display(error.path)
        origin = Origin(display, error.line, error.column, error.line, error.column + 1)
        report.findings.append(Finding(rule.id, rule.name, rule.severity, error.message, origin))

    # ----- launch scripts ------------------------------------------------------------------

    def launch_checker(self):
        if getattr(self, "_launch_checker", None) is None:
            from mblint.launch import LaunchChecker

            self._launch_checker = LaunchChecker(self)
        return self._launch_checker

    # ----- yaml --------------------------------------------------------------------------

    def check_yaml(self, path: Path, report: FileResult) -> set[Path]:
        """Lint an override file with the recipe it is paired with; returns the files the
        result depends on. A file paired with no recipe is reported as not analysed."""
        from mblint.overrides import load_yaml
        from mblint.pairing import Unpaired, pairing

        self.enter_file(path)
        try:
            if not self.confinement.allows(path):
                raise SourceError(path, OUTSIDE_PROJECT)
            document = load_yaml(path)
        except SourceError as error:
            self.syntax_finding(error, report)
            return set()
        paired = pairing(path, document, self.options.recipe, self.settings_for(path))
        if isinstance(paired, Unpaired):
            checker = self.launch_checker()
            by_entry = checker.check_yaml_by_entry(path, report)  # a training script loading it
            if by_entry is not None:
                return by_entry
            commands = checker.check_yaml_commands(path, report)  # launch lines kept in the YAML
            if commands is not None:
                return commands
            self.unpaired(path, paired, report)
            return set()
        where, separator, function = paired.recipe.rpartition("::")
        if separator and (not where or not function.isidentifier()):
            report.errors.append(FileError(str(path), f"malformed pairing {paired.recipe!r}: expected "
                                                      "recipe=PATH_OR_MODULE::FUNCTION"))
            return set()
        target = self.find_recipe(paired.recipe, path)
        if target is None:
            report.errors.append(FileError(str(path), f"paired recipe {paired.recipe!r} not found"))
            return set()
        if not self.confinement.allows(target[0]):
            report.errors.append(FileError(str(path), f"paired recipe {paired.recipe!r} is outside the project and "
                                                      "its search paths: not read"))
            return set()
        recipe_path, function = target
        try:
            text = self.project.interpreter_for(recipe_path).finder.load(recipe_path).mblint_text
        except SourceError as error:
            self.syntax_finding(error, report)
            return set()
        report.recipes += 1
        before = len(report.findings)
        self.check_recipe(recipe_path, function, text, report, overrides=[path], dotlist=self.options.dotlist)
        self.leave_out_recipe_own_findings(recipe_path, function, text, path, report, before)
        return self._deps(recipe_path) | {recipe_path.resolve()}

    def leave_out_recipe_own_findings(self, recipe_path: Path, function: str, text: str, override: Path,
                                      report: FileResult, start: int) -> None:
        """The findings from ``start`` on that the recipe has without the override file are
        not caused by it: they are counted in a note instead of reported on the override's run
        (linting the recipe reports them at their own lines)."""
        added = report.findings[start:]
        if not added:
            return
        try:
            graph = self.project.resolve_graph(recipe_path, function)
        except (SourceError, LookupError):
            return
        if graph is None:
            return
        alone = graph.build()
        own: list[Finding] = []
        world_size, source = self.world_size_for(alone, text)
        self.config_rules(alone.schema_version, world_size, source).calls(alone).run(alone, own, [])
        causes = {(f.rule_id, f.fields, f.message) for f in own}
        kept = [f for f in added if (f.rule_id, f.fields, f.message) not in causes]
        if len(kept) == len(added):
            return
        report.findings[start:] = kept
        left = len(added) - len(kept)
        report.notes.append(f"{left} finding{'s' if left != 1 else ''} of {self.project_display(recipe_path)}::{function} "
                            f"{'are' if left != 1 else 'is'} the recipe's own, not caused by "
                            f"{self.project_display(override)}: lint the recipe to see {'them' if left != 1 else 'it'}")

    def unpaired(self, path: Path, unpaired, report: FileResult) -> None:
        """An override file paired with no recipe is a SY005 finding on its first section;
        any other YAML file is only counted as not analysed."""
        message = unpaired.message()
        if unpaired.looks_like_override:
            self.not_analysed_finding(path, unpaired.line, 1, len(unpaired.override_keys[0]), message, report)
        else:
            report.not_analysed.append([self.project_display(path), message])

    def find_recipe(self, pairing: str, near: Path) -> tuple[Path, str] | None:
        """``path::function``, ``module::function``, or a recipe name that
        ``megatron.bridge.recipes`` exports (``llama32_1b_peft_config``)."""
        if "::" not in pairing:
            interp = self.project.interpreter_for(near)
            found = self.launch_checker().lookup(interp).find(pairing.strip())
            return (found[0], found[1]) if found else None
        where, function = pairing.rsplit("::", 1)
        candidates = [Path(where), near.parent / where]
        for candidate in candidates:
            if candidate.is_file():
                return candidate, function
        interp = self.project.interpreter_for(near)
        found = interp.finder.find(where)
        return (found, function) if found else None


class _ExplicitFiles:
    """The files named on the command line, resolved only when a settings exclude asks."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._resolved: set[Path] | None = None

    def __contains__(self, path: Path) -> bool:
        if self._resolved is None:
            self._resolved = {Path(p).resolve() for p in self.paths if Path(p).is_file()}
        return path.resolve() in self._resolved


def _directive_free(path: Path) -> bool:
    from mblint.extract.modules import MAX_SOURCE_BYTES
    from mblint.paths import read_regular

    try:  # never a FIFO or device, never past the size limit
        return b"mblint" not in read_regular(path, MAX_SOURCE_BYTES)
    except (OSError, ValueError):
        return False


def _decoded(cached: dict, seen: set) -> FileResult | None:
    """The result a cache entry holds, or None when the entry is damaged (a severity out of
    range, a wrong type, a missing key): a cache folder may come from an untrusted checkout.
    ``seen`` is left as it was for a damaged entry."""
    before = set(seen)
    try:
        result = FileResult.from_dict(cached, seen)
        if not all(isinstance(n, str) for n in result.notes) or not all(map(_well_formed, result.findings)):
            raise TypeError("not a result")
        return result
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError):
        seen.clear()
        seen.update(before)
        return None


def _well_formed(finding: Finding) -> bool:
    places = (finding.location, *(related.origin for related in finding.related))
    return (isinstance(finding.message, str) and isinstance(finding.recipe, str)
            and all(isinstance(place.path, str) and all(type(number) is int for number in
                    (place.line, place.column, place.end_line, place.end_column)) for place in places))


def summarise_missing_hf_configs(report: Report) -> None:
    """One note for every recipe whose model's config.json was not at hand (each recipe
    leaves one): how many, which models, and how to provide them."""
    report.notes = unusable_config_notes(report.notes)
    marked = [note for note in report.notes if note.startswith(HF_CONFIG_MISSING)]
    if not marked:
        return
    report.notes = [note for note in report.notes if not note.startswith(HF_CONFIG_MISSING)]
    models = sorted({model.strip() for note in marked for model in note.split(": ", 2)[-1].split(", ")})
    shown = ", ".join(models[:8]) + (f" and {len(models) - 8} more" if len(models) > 8 else "")
    report.notes.append(
        f"{len(marked)} recipe{'s use' if len(marked) != 1 else ' uses'} Hugging Face models whose config.json is "
        f"not available here ({shown}): their provider class and architecture fields (layers, heads, experts...) "
        "are unknown and the checks that need them did not run. Put the config in the local Hugging Face cache "
        "(`huggingface-cli download ORG/NAME config.json`; HF_HUB_CACHE or HF_HOME say where it is) or in a "
        "folder of ORG/NAME/config.json files named by `hf-config-paths` in the settings.")


def _dedupe(findings: list[Finding]) -> list[Finding]:
    seen = set()
    unique = []
    for finding in findings:
        key = finding.identity()
        if key not in seen:
            seen.add(key)
            unique.append(finding)
    return unique


def _one_per_problem_and_place(findings: list[Finding]) -> list[Finding]:
    """One finding per rule, place and fields across recipes: recipes that share a helper line
    report its problem once, whatever values each gives the message. The recipe kept is the one
    whose message comes first, so the report does not depend on the order the files were linted
    in; its configurations (alone, with an override file) keep their findings."""
    chosen: dict[tuple, tuple] = {}
    for finding in findings:
        place = _place(finding)
        candidate = (finding.message, finding.recipe)
        if place not in chosen or candidate < chosen[place]:
            chosen[place] = candidate
    return [finding for finding in findings if chosen[_place(finding)][1] == finding.recipe]


def _place(finding: Finding) -> tuple:
    location = finding.location
    return (finding.rule_id, location.path, location.line, location.column, finding.fields)


# Source bytes that keep a worker busy long enough to pay for starting it and sending its
# answers back (about 30 ms of work; a fork and the transfer cost about 10-15 ms).
BYTES_PER_WORKER = 100_000


def _default_jobs(sizes: dict[Path, int]) -> int:
    """One worker per ``BYTES_PER_WORKER`` of source to check (``sizes``: bytes per file);
    never more than the cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores <= 1 or len(sizes) <= 1:
        return 1
    return min(cores, max(1, sum(sizes.values()) // BYTES_PER_WORKER))


def _check_in_workers(engine: Engine, paths: list[Path], groups: list[list[Path]], jobs: int):
    import pickle

    from mblint import workers

    if not workers.can_fork():
        for path in paths:
            yield (path, *engine.check_file_guarded(path))
        return

    def check_unit(unit: list[str]) -> bytes:
        return dumps_for_transfer([(raw, *engine.check_file_guarded(Path(raw))) for raw in unit])

    def check_unit_here(unit: list[str]) -> list[tuple[str, FileResult, set[Path]]]:
        return [(raw, *engine.check_file_guarded(Path(raw))) for raw in unit]

    units = [[str(p) for p in group] for group in groups]
    engine.prepare_resolver(paths)
    results = {}
    for _, answers in workers.run_units(check_unit, units, jobs, check_unit_here):
        if isinstance(answers, bytes):  # from a worker
            answers = pickle.loads(answers)
        for raw, result, deps in answers:
            results[raw] = (result, deps)
    for path in paths:  # in the given order, as a single process would report them
        yield (path, *results[str(path)])


def _file_result_reduced(result: FileResult) -> tuple:
    return FileResult, (result.findings, result.errors, result.notes, result.recipes, result.resolved,
                        result.directive_free, result.not_analysed, result.schemas)


def _file_error_reduced(error: FileError) -> tuple:
    return FileError, (error.path, error.message, error.line, error.column)


_TRANSFER_TABLE: dict | None = None


def dumps_for_transfer(value: Any) -> bytes:
    """``value`` (file results, the findings in them) pickled for another process of the same
    run, each part rebuilt from a tuple of its values (see ``TRANSFER_REDUCERS``)."""
    import copyreg
    import io
    import pickle

    global _TRANSFER_TABLE
    if _TRANSFER_TABLE is None:
        _TRANSFER_TABLE = {**copyreg.dispatch_table, **TRANSFER_REDUCERS, FileResult: _file_result_reduced,
                           FileError: _file_error_reduced}
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _TRANSFER_TABLE
    pickler.dump(value)
    return buffer.getvalue()


def _work_groups(paths: list[Path], jobs: int, sizes: dict[Path, int]) -> list[list[Path]]:
    """Work units for the workers. Files are grouped by model family (``_family_groups``), whose
    recipes read the same modules: one worker then parses and interprets those once; a group
    much bigger than an even share is cut in contiguous pieces. Biggest first, by bytes, so
    that the work left at the end is small and both workers finish together."""
    share = max(1, sum(sizes.values()) // max(1, jobs * 4))
    units = []
    for group in _family_groups(paths):
        weight = sum(sizes[p] for p in group)
        pieces = max(1, min(len(group), round(weight / share))) if weight > 2 * share else 1
        step = -(-len(group) // pieces)
        units.extend(group[i:i + step] for i in range(0, len(group), step))
    return sorted(units, key=lambda unit: -sum(sizes[p] for p in unit))


def _family_groups(paths: list[Path]) -> list[list[Path]]:
    """Files grouped by the name of their folder one level below the top folders under the
    folder common to all of them: ``recipes/llama/...`` and ``perf_recipes/llama/...`` are one
    family (performance recipes call the family's base recipes). A file less deep is grouped
    by its top folder."""
    cwd = os.getcwd()
    absolute = {path: os.path.normpath(os.path.join(cwd, path)) for path in paths}
    try:
        common = os.path.commonpath(list(absolute.values()))
    except ValueError:  # different drives
        common = ""
    groups: dict[tuple, list[Path]] = {}
    for path in sorted(paths, key=str):
        parts = _below(absolute[path], common).split(os.sep) if common else [absolute[path]]
        groups.setdefault((parts[1],) if len(parts) > 2 else tuple(parts[:len(parts) - 1]), []).append(path)
    return list(groups.values())


def _below(path: str, folder: str) -> str:
    """``path`` relative to ``folder``, a folder that holds it (both absolute, normalised)."""
    if path == folder:
        return "."
    return path[len(folder.rstrip(os.sep)) + 1:]


def _size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
