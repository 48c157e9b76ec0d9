"""Readers: one per kind of source, each turning the files of its kind into jobs.

A job is what a user launches: a recipe function, the override files and command-line
overrides applied to it, the world size it runs at, each value with its origin. The readers
find the jobs of a file and hand each to the engine (``Services.check_recipe`` for a recipe
and its override files, the launch reader's ``run`` for a launch line), which resolves the
configuration and runs the rules on it.

- ``python``: a Python module; each recipe function it defines is a job.
- ``overrides``: a YAML override file; the recipe it is paired with, with the file applied.
- ``launch``: a launch script (or the ``command:`` entries of a YAML file); each launcher
  invocation is a job.
- ``entry``: a Python training script that a launch line runs instead of Megatron-Bridge's
  runner; read for the recipe it builds and the override files it loads.

Readers never import the engine: what they may ask of it is ``Services``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from mblint.extract.modules import SourceError
    from mblint.model import EffectiveConfig, Origin
    from mblint.results import FileResult
    from mblint.rule import RulePlan


class Reader(Protocol):
    def read(self, path: Path, result: "FileResult") -> set[Path]:
        """Check the jobs of ``path``, adding findings to ``result``; the files the result
        depends on (they key the cache)."""


class Services(Protocol):
    """What a reader may ask of the engine (``mblint.engine.Engine`` provides it)."""

    options: Any
    confinement: Any
    display_root: Path
    rules: list

    @property
    def project(self) -> Any: ...

    def enter_file(self, path: Path) -> None: ...

    def settings_for(self, path: Path) -> Any: ...

    def project_display(self, path: Path) -> str: ...

    def dependencies(self, path: Path) -> set[Path]: ...

    def editable_frozen(self) -> frozenset[str]: ...

    def check_recipe(self, path: Path, function: str, text: str, report: "FileResult",
                     overrides: Any = (), dotlist: tuple[str, ...] = ()) -> "EffectiveConfig | None": ...

    def world_size_for(self, cfg: "EffectiveConfig", text: str) -> tuple[int | None, str]: ...

    def config_rules(self, line: str, world_size: int | None, source: str) -> "RulePlan": ...

    def rule_in_force(self, rule_id: str) -> Any: ...

    def report_at(self, rule_id: str, origin: "Origin", message: str, result: "FileResult",
                  recipe: str = "", severity: Any = None) -> None: ...

    def syntax_finding(self, error: "SourceError", result: "FileResult") -> None: ...

    def not_analysed_finding(self, path: Path, line: int, column: int, width: int, message: str,
                             result: "FileResult", recipe: str | None = None) -> None: ...

    def launch_reader(self) -> Any: ...
