"""Readers: one per kind of source, each turning the files of its kind into jobs.

A job is what a user launches: a recipe function, the override files and command-line
overrides applied to it, the world size it runs at, each value with its origin. The readers
find the jobs of a file and hand each to the engine, which resolves the configuration the same
way for every job (``Services.job_graph``: the recipe; ``Services.configure``: its override
files, its command-line overrides, and what its ``Launcher`` does around them) and runs the
rules on it (``Services.run_rules``); ``Services.check_job`` does all three for a recipe and its
override files and ``--set`` items. A launch line's reader calls them itself: it places the
errors on the launch line and compares the job's findings with the recipe's own.

- ``python``: a Python module; each recipe function it defines is a job.
- ``overrides``: a YAML override file; the recipe it is paired with, with the file applied.
- ``launch``: a launch script (or the ``command:`` entries of a YAML file); each launcher
  invocation is a job.
- ``entry``: a Python training script that a launch line runs instead of Megatron-Bridge's
  runner; read for the recipe it builds and the override files it loads.

Readers never import the engine: what they may ask of it is ``Services``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mblint.extract.modules import SourceError
    from mblint.findings import Finding
    from mblint.model import EffectiveConfig, LaunchEnvironment, Origin
    from mblint.results import FileResult


@dataclass(frozen=True)
class Job:
    """One job, as a reader found it. What is launched: the recipe function (``recipe``, its
    file, and ``function``), the override files applied to it in order, then the command-line
    overrides (``--set`` items, a launch line's ``key=value`` words), each value keeping its
    origin when it is applied. The job's files (the recipe's, the launch script, the override
    files; display paths), where its findings land as they do when the recipe's file is linted
    (mblint still edits only the files it lints). The world size the launch decides
    (``world_source`` "launch"; None when it is unknown there, ``world_unknown`` saying where)
    or, without a ``world_source``, the recipe's own. Where the job is (``where``, the launch
    line or the override file), named by ``about`` on the findings the recipe has in the job.
    The recipe function's arguments (``kwargs``, as (name, value) pairs: a launch's ``--mode``,
    a training script's call). What launches it (``launcher``, a ``Launcher``; None: the recipe
    as Megatron-Bridge's ``ConfigContainer`` leaves it, with its overrides). The environment
    variables its launch sets (``environment``, a ``model.LaunchEnvironment``; None without a
    launch script)."""

    files: frozenset[str] = frozenset()
    world_size: int | None = None
    world_source: str = ""
    where: "Origin | None" = None
    about: str = ""
    world_unknown: "Origin | None" = None
    recipe: Path | None = None
    function: str = ""
    override_files: tuple[Path, ...] = ()
    overrides: tuple[str, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()
    launcher: "Launcher | None" = None
    environment: "LaunchEnvironment | None" = None


class Launcher(Protocol):
    """What a launch does to its recipe's configuration around the overrides
    (``Services.configure`` calls them in this order)."""

    def before(self, graph: Any) -> None:
        """Before the override files (a training script's own assignments, ``--dataset``)."""

    def overrides(self) -> list:
        """The command line's overrides (``mblint.overrides.Override``), made when they are
        applied: after the override files' (Hydra's order). Raises DotlistError."""

    def after(self, graph: Any) -> None:
        """After every override (Megatron-Bridge's runner: its defaults and synchronisations)."""


def in_project(display: str) -> bool:
    """Whether a file shown as ``display`` is inside the project (a path below the display
    root): a place that reports, SARIF's above all, can name."""
    return not (display.startswith(("/", "../")) or display == "..")


def in_project_place(finding: "Finding", job: Job) -> "Finding":
    """A finding of ``job`` where a report can show it: a place outside the project (an
    installed Megatron-Bridge recipe's line) becomes the job's place, that line related."""
    from mblint.findings import Related

    if not in_project(finding.location.path):
        finding.related = (Related(finding.location, "the recipe's own problem is here"),) + finding.related
        finding.location = job.where
    return finding


class Readers:
    """The reader of each kind of file, made on first use and kept for the run."""

    def __init__(self, services: "Services") -> None:
        self.services = services
        self._made: dict[str, Any] = {}

    def for_path(self, path: Path) -> "Reader":
        """The reader of ``path``'s kind: Python module, override file, or launch script."""
        from mblint.discover import YAML_SUFFIXES

        if path.suffix == ".py":
            return self._reader("python")
        return self._reader("overrides" if path.suffix in YAML_SUFFIXES else "launch")

    @property
    def launch(self) -> Any:
        """The launch reader, shared by the readers of launch scripts and override files (which
        may hold launch lines): it keeps the recipe look-ups it made."""
        return self._reader("launch")

    def _reader(self, kind: str) -> Any:
        if kind not in self._made:
            if kind == "python":
                from mblint.readers.python import PythonReader as make
            elif kind == "overrides":
                from mblint.readers.overrides import OverridesReader as make
            else:
                from mblint.readers.launch import LaunchReader as make
            self._made[kind] = make(self.services)
        return self._made[kind]


class Reader(Protocol):
    def read(self, path: Path, result: "FileResult") -> set[Path]:
        """Check the jobs of ``path``, adding findings to ``result``; the files the result
        depends on (they key the cache)."""


class Services(Protocol):
    """What a reader may ask of the engine (``mblint.engine.Engine`` provides it)."""

    options: Any
    confinement: Any
    display_root: Path
    rule_run: Any  # mblint.rule_run.RuleRun: the rules in force, and running them

    @property
    def project(self) -> Any: ...

    def enter_file(self, path: Path) -> None: ...

    def settings_for(self, path: Path) -> Any: ...

    def project_display(self, path: Path) -> str: ...

    def dependencies(self, path: Path) -> set[Path]: ...

    def editable_frozen(self) -> frozenset[str]: ...

    def check_job(self, job: Job, text: str, report: "FileResult") -> "EffectiveConfig | None": ...

    def job_graph(self, job: Job) -> Any: ...

    def configure(self, graph: Any, job: Job, report: "FileResult", refused: Any) -> "EffectiveConfig | None": ...

    def run_rules(self, cfg: "EffectiveConfig", text: str, report: "FileResult", job: Job | None = None) -> set[str]: ...

    def world_size_for(self, cfg: "EffectiveConfig", text: str) -> tuple[int | None, str]: ...

    def report_at(self, rule_id: str, origin: "Origin", message: str, result: "FileResult",
                  recipe: str = "", severity: Any = None) -> None: ...

    def syntax_finding(self, error: "SourceError", result: "FileResult") -> None: ...

    def not_analysed_finding(self, path: Path, line: int, column: int, width: int, message: str,
                             result: "FileResult", recipe: str | None = None) -> None: ...

    readers: Readers
