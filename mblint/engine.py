"""The orchestrator: discover the files, hand each to the reader of its kind (mblint.readers),
which finds its jobs; resolve each job's configuration, run the rules on it, and collect the
findings (one per problem and place), served from the result cache when it can."""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mblint.arbitration import one_per_place, unique
from mblint.discover import ExplicitFiles, directive_free, discover
from mblint.extract.modules import SourceError, SourceLimit
from mblint.findings import Finding, Severity
from mblint.coverage import ENVIRONMENT_UNKNOWN, environment_gaps, record_gaps
from mblint.hf_config import HF_CONFIG_UNUSABLE, unusable_config_notes
from mblint.model import EffectiveConfig, Origin
from mblint.paths import Confinement, confinement_for
from mblint.readers import Job, Readers
from mblint.results import FileError, FileResult, Report, decoded_result
from mblint.rule_run import RuleRun
from mblint.file_settings import FileSettings
from mblint.cache import result_cache, schema_folder
from mblint.suppress import apply_suppressions
from mblint.world_size import WorldSizes

if TYPE_CHECKING:
    from mblint.plugins import LoadedPlugins



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


class Engine:
    def __init__(self, options: CheckOptions, plugins: "LoadedPlugins | None" = None) -> None:
        self.options = options
        self.display_root = Path.cwd()
        self._project = None
        self.editable: set[str] = set()
        self.file_settings = FileSettings(options.settings)
        self.world_sizes = WorldSizes(self.settings_for_display)
        self.directive_free: set[str] = set()  # display paths whose text never mentions "mblint"
        self._displays: dict = {}  # path -> display, for _displays_root and _displays_cwd
        self._displays_root = self._displays_cwd = None
        self._known_sizes: dict[Path, int] = {}  # bytes per file, as discovery found them
        # What may be read: the project of the working folder, the search paths and the
        # installations of Megatron-Bridge; check_paths adds the projects of the paths it is given.
        self.confinement: Confinement = confinement_for([], options.search_paths)
        self.rule_run = RuleRun(options, plugins)
        self.readers = Readers(self)
        # The files each file checked (not served from the cache) in the last run read: what
        # keys its cache entry; the language server re-checks an open file when one changes.
        self.file_dependencies: dict[Path, set[Path]] = {}
        # What the last run found and the result cache it used: what its output depends on
        # (mblint.run_results).
        self.discovered = None
        self.result_cache = None

    # ----- settings (per file) -------------------------------------------------------------

    def settings_for(self, path: Path):
        """The settings in force for ``path``; None when there are none or they cannot be read
        (the error is reported once, and the files they govern are not checked)."""
        return self.file_settings.of(path)

    def settings_for_display(self, display: str):
        """``settings_for`` of a path as findings show it (relative to the display root)."""
        return self.file_settings.of_display(self.display_root, display)

    def enter_file(self, path: Path) -> None:
        """Apply the settings in force for ``path``: rules, schema line, import roots."""
        settings = self.settings_for(path)
        self.rule_run.enter(settings)
        if settings is None:
            return
        if not self.options.version:
            self.project.version = settings.version
        self.file_settings.widen(self.project, settings, self.confinement)

    @property
    def project(self):
        """The resolver, imported and built on first use: a fully cached run never needs it."""
        if self._project is None:
            from mblint.resolve import Project

            self._project = Project(list(self.options.search_paths), self.options.version, self.display_root,
                                    self.confinement)
            self._project.schema_source = self.options.schema_source
            self._project.schema_cache = schema_folder(self.options, self.display_root)
        self._project.display_root = self.display_root
        self._project.real_paths.cwd = self.file_settings.cwd
        return self._project

    def report_at(self, rule_id: str, origin: Origin, message: str, result: FileResult, recipe: str = "",
                  severity: Severity | None = None) -> None:
        """A finding of the rule ``rule_id`` that a reader reports while reading (a syntax error, a
        launch line), when the rule is enabled; ``severity``: one of its other severities."""
        rule = self.rule_run.in_force(rule_id)
        if rule is not None:
            result.findings.append(Finding(rule.id, rule.name, rule.severity if severity is None else severity,
                                           message, origin, recipe=recipe))

    def check_paths(self, paths: list[str]) -> Report:
        """Lint ``paths``. The cyclic garbage collector is paused meanwhile: the run allocates
        millions of small acyclic objects (tuples, AST nodes) that reference counting frees, and
        the collector's rescans of them cost a third of the time."""
        was_enabled = gc.isenabled()
        gc.disable()
        self.file_settings.cwd = os.getcwd()  # fixed during a run; in-process callers may change it between runs
        try:
            return self._check_paths(paths)
        finally:
            self.file_settings.cwd = None
            if was_enabled:
                gc.enable()

    def _check_paths(self, paths: list[str]) -> Report:
        report = Report()
        run_cwd = self.file_settings.cwd
        self.confinement.roots = confinement_for(paths, self.options.search_paths, run_cwd).roots
        report.confinement = self.confinement
        found = discover(paths, self.options.excludes, self.options.force_exclude, run_cwd,
                         allows=self.confinement.allows)
        self._known_sizes = found.sizes
        self.discovered = found
        self.file_settings.link_modes = found.link_modes
        report.notes.extend(self.file_settings.keep_linted(found, paths, ExplicitFiles(paths), self.options.force_exclude,
                                                           self.options.search_paths, self.project_display))
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
        cache = result_cache(self.options, self.display_root, self.rule_run)  # before the rule pack is needed
        self.result_cache = cache
        report.errors[0:0] = [FileError("mblint", error) for error in self.rule_run.plugins.errors]  # a rule pack not loaded
        files = self.file_settings.with_valid_selectors(files, self.rule_run.all_rules)
        displays = [self.project_display(p) for p in files]
        self.editable = set(displays)
        results, pending = {}, []
        if cache is not None:
            cache.linted = frozenset(os.path.abspath(path) for path in files)
        for path in files:
            cached = cache.get(path, self.file_settings.source(path)) if cache else None
            result = decoded_result(cached) if cached is not None else None
            if cached is not None and result is None:  # a damaged entry: checked again, and the entry rewritten
                cache.miss()
            if result is None:
                pending.append(path)
            else:
                results[path] = result
        for path, result, deps in self.check_files(pending):
            self.file_dependencies[path] = deps
            results[path] = result
            if cache is not None and not result.errors:
                cache.put(path, deps, result.to_dict(), self.file_settings.source(path))
        # Merged in the files' order, cached or not: which recipe a shared finding keeps
        # (mblint/arbitration.py) must not depend on what the cache held.
        for path in files:
            report.add(results[path])
            if results[path].directive_free:
                self.directive_free.add(self.project_display(path))
        report.files = len(files)
        report.cache_hits = cache.hits if cache else 0
        report.findings = one_per_place(report.findings)

        report.checked = displays
        report.notes.extend(dict.fromkeys(schema["note"] for schema in report.schemas if schema.get("note")))
        summarise_hf_config_notes(report)
        apply_suppressions(self, report, files)
        report.rules = sorted(self.rule_run.used or self.rule_run.base_rules, key=lambda r: r.id)
        for message in sorted(self.file_settings.errors):
            report.errors.append(FileError(message, "the files these settings govern are not checked"))
        report.errors.extend(FileError(source, message)
                             for source, message in sorted(self.file_settings.confinement_errors))
        report.findings.sort(key=Finding.sort_key)
        return report

    def editable_frozen(self) -> frozenset[str]:
        if getattr(self, "_editable_frozen", None) is None or self._editable_frozen[0] is not self.editable:
            self._editable_frozen = (self.editable, frozenset(self.editable))
        return self._editable_frozen[1]

    def check_files(self, paths: list[Path]):
        """(path, FileResult, dependencies) for each file, in worker processes when there is
        enough work to pay for them."""
        if paths:
            self.rule_run.load_rule_classes()
        from mblint import workers

        yield from workers.check_files(self, paths, self._known_sizes)

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
        self.rule_run.load_rule_classes()
        result = FileResult()
        deps = self.readers.for_path(path).read(path, result)
        if self.file_settings.source(path):
            deps = deps | {Path(self.file_settings.source(path))}
        result.directive_free = self._directive_free(path)
        # The recipes of a file often report the same finding (a helper they share): the report
        # keeps the first of each anyway, and the others need not be encoded, sent and decoded.
        result.findings = unique(result.findings)
        return result, deps

    def _directive_free(self, path: Path) -> bool:
        """No directive in the file's text (``may_hold_directives``); a Python file's text is the one already read."""
        if path.suffix == ".py":
            try:
                return not self.project.interpreter_for(path).finder.load(path).mblint_text
            except SourceError:
                return False
        return directive_free(path)

    def dependencies(self, path: Path) -> set[Path]:
        from mblint.schema.source import bridge_source_probes

        try:
            interp = self.project.interpreter_for(path)
            deps = interp.dependencies(interp.finder.real_paths.of(path))
            deps |= set(bridge_source_probes(self.project.roots_for(path)))  # none there yet is another schema
            return deps | {Path(p) for p in interp.schema.source_files} if interp.schema.source_files else deps
        except Exception:  # noqa: BLE001 - deps only decide caching
            return set()

    def project_display(self, path: Path) -> str:
        """How findings name ``path``; asked several times per checked file."""
        root, cwd = self.display_root, self.file_settings.cwd or os.getcwd()
        if root is not self._displays_root or cwd != self._displays_cwd:  # answers made for others
            self._displays, self._displays_root, self._displays_cwd = {}, root, cwd
        display = self._displays.get(path)
        if display is None:
            from mblint.extract.modules import display_path

            display = self._displays[path] = display_path(path, root, cwd)
        return display

    # ----- python ------------------------------------------------------------------------

    def check_job(self, job: Job, text: str, report: FileResult) -> EffectiveConfig | None:
        """Resolve ``job``'s configuration (``job_graph``, then ``configure``) and run the rules
        on it; ``text``: the recipe file's text (its world-size comment)."""
        path, function = job.recipe, job.function
        try:
            graph = self.job_graph(job)
        except SourceError as error:
            self.syntax_finding(error, report)
            return None
        except LookupError:
            report.errors.append(FileError(self.project_display(path), f"paired recipe function {function!r} not found"))
            return None
        from mblint.readers.python import explain_unresolved, report_limits

        interp = self.project.interpreter_for(path)
        report_limits(self, interp.limits, path, function, report)
        if graph is None:
            if not interp.limits:
                explain_unresolved(self, path, function, report)
            return None
        cfg = self.configure(graph, job, report, lambda error: report.errors.append(FileError("--set", str(error))))
        if cfg is None:
            return None
        report.notes.extend(sorted({note for note in cfg.notes if note.startswith(HF_CONFIG_UNUSABLE)}))
        self.run_rules(cfg, text, report, job)
        return cfg

    def job_graph(self, job: Job):
        """The graph of ``job``'s recipe function called with the job's arguments; None when
        mblint cannot follow it. Raises SourceError (the recipe's file cannot be read) and
        LookupError (no such function): the reader says where."""
        return self.project.resolve_graph(job.recipe, job.function, dict(job.kwargs) or None)

    def configure(self, graph, job: Job, report: FileResult, refused) -> EffectiveConfig | None:
        """The configuration ``job`` runs: its recipe's ``graph`` with, in Megatron-Bridge's
        order, what the job's launcher does first, the override files, the command-line
        overrides (the launcher's, else ``job.overrides``), then what the launcher does after
        them; built. None when an override file cannot be read (SY001) or a command-line
        override is not understood (``refused(error)`` says it where the reader wants).
        mblint.overrides is imported only for a job that has overrides: most have none."""
        launcher = job.launcher
        if job.override_files or job.overrides or launcher is not None:
            from mblint.overrides import DotlistError, apply_dotlist, apply_overrides, apply_yaml_file

            if launcher is not None:
                launcher.before(graph)
            try:
                for override in job.override_files:
                    apply_yaml_file(graph, override)
                if launcher is not None:
                    apply_overrides(graph, launcher.overrides())
                elif job.overrides:
                    apply_dotlist(graph, list(job.overrides))
            except SourceError as error:
                self.syntax_finding(error, report)
                return None
            except DotlistError as error:
                refused(error)
                return None
            if launcher is not None:
                launcher.after(graph)
        cfg = graph.build()
        cfg.environment = job.environment
        report.resolved += 1
        return cfg

    def run_rules(self, cfg: EffectiveConfig, text: str, report: FileResult, job: Job | None = None) -> set[str]:
        """The one way every job's configuration is checked: the enabled rules run on ``cfg``,
        their findings appended to ``report``; a rule that raises is an error of the run (exit
        code 2), never a pass. The world size is the option's, else the one ``job`` decides
        (unknown when the launch's is), else the recipe's (``world_size_for``); a finding may
        land in the files being linted and the job's own. Returns the ids of the rules that read
        the world size the job decided."""
        if job is not None and job.world_source and not self.options.world_size:
            world_size, source = job.world_size, job.world_source
        else:
            world_size, source = self.world_size_for(cfg, text)
        crashes: list[str] = []  # a rule that raised: an error (exit 2), never a passing run
        start = len(report.findings)
        watched = job is not None and bool(job.world_source) and source == job.world_source
        editable = self.editable_frozen() | job.files if job is not None and job.files else self.editable_frozen()
        unknown_environment: dict | None = {} if cfg.environment is not None else None
        readers = self.rule_run.run(cfg, world_size, source, editable, report.findings, crashes, watched,
                                    job.world_unknown if watched else None, unknown_environment)
        for where, message in environment_gaps(unknown_environment or {}):
            self.report_at(ENVIRONMENT_UNKNOWN, where, message, report, recipe=cfg.recipe.label)
        record_gaps(cfg.recipe.label, report.findings[start:], self.rule_run.rules, report.unchecked)
        if job is not None and job.where is not None:
            where = job.where
            report.errors.extend(FileError(where.path, crash, where.line, where.column) for crash in crashes)
        else:
            report.errors.extend(FileError(cfg.recipe.path, crash) for crash in crashes)
        return readers

    def world_size_for(self, cfg: EffectiveConfig, text: str) -> tuple[int | None, str]:
        """The world size rules assume for ``cfg`` and where it came from: the option, the
        settings or comment of the recipe's file, or the function's name; kept per function."""
        return self.world_sizes.of(cfg, text, self.options.world_size, self.display_root)

    def not_analysed_finding(self, path: Path, line: int, column: int, width: int, message: str,
                             report: FileResult, recipe: str | None = None) -> None:
        display = self.project_display(path)
        report.not_analysed.append([display, message])
        origin = Origin(display, line, column, line, column + max(width, 1))
        self.report_at("SY005", origin, message, report, recipe=f"{display}::{recipe}" if recipe else "")

    def syntax_finding(self, error: SourceError, report: FileResult) -> None:
        """SY001 for a file that cannot be read or parsed; SY002 when mblint's own limits
        stopped it from reading the file whole."""
        display = self.project_display(error.path)
        origin = Origin(display, error.line, error.column, error.line, error.column + 1)
        self.report_at("SY002" if isinstance(error, SourceLimit) else "SY001", origin, error.message, report)


def summarise_hf_config_notes(report: Report) -> None:
    """The notes recipes left on config.json files they could not use, one per file (a
    config.json not found is a coverage finding, CV002)."""
    report.notes = unusable_config_notes(report.notes)


