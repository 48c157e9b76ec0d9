"""YAML override files: the job is the recipe the file is paired with (a ``# mblint: recipe=``
comment, the settings' ``pairing``, ``--recipe``), with the file applied. A file no recipe is
paired with may be loaded by a training script beside it, or hold launch lines (``command:``
entries): those are launch jobs. Any other override file is reported as not analysed."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from mblint.arbitration import name_the_job
from mblint.extract.modules import OUTSIDE_PROJECT, SourceError
from mblint.model import Origin
from mblint.readers import Job, in_project_place
from mblint.results import FileError

if TYPE_CHECKING:
    from mblint.findings import Finding
    from mblint.model import EffectiveConfig
    from mblint.readers import Services
    from mblint.results import FileResult


class OverridesReader:
    def __init__(self, engine: "Services") -> None:
        self.engine = engine

    def read(self, path: Path, report: "FileResult") -> set[Path]:
        """Lint an override file with the recipe it is paired with; returns the files the
        result depends on. A file paired with no recipe is reported as not analysed."""
        from mblint.overrides import load_yaml
        from mblint.pairing import Unpaired, pairing

        engine = self.engine
        engine.enter_file(path)
        try:
            if not engine.confinement.allows(path):
                raise SourceError(path, OUTSIDE_PROJECT)
            document = load_yaml(path)
        except SourceError as error:
            engine.syntax_finding(error, report)
            return set()
        paired = pairing(path, document, engine.options.recipe, engine.settings_for(path))
        if isinstance(paired, Unpaired):
            checker = engine.readers.launch
            searched: set[Path] = set()  # where training scripts were looked for
            by_entry = checker.check_yaml_by_entry(path, report, searched)  # a training script loading it
            if by_entry is not None:
                return by_entry | searched
            commands = checker.check_commands_in(path, document, report)  # launch lines kept in the YAML
            if commands is not None:
                return commands | searched
            self.unpaired(path, paired, report)
            return searched
        where, separator, function = paired.recipe.rpartition("::")
        if separator and (not where or not function.isidentifier()):
            report.errors.append(FileError(str(path), f"malformed pairing {paired.recipe!r}: expected "
                                                      "recipe=PATH_OR_MODULE::FUNCTION"))
            return set()
        searched: set[Path] = set()  # where the recipe was looked for
        target = find_recipe(engine, paired.recipe, path, searched)
        if target is None:
            report.errors.append(FileError(str(path), f"paired recipe {paired.recipe!r} not found"))
            return searched
        if not engine.confinement.allows(target[0]):
            report.errors.append(FileError(str(path), f"paired recipe {paired.recipe!r} is outside the project and "
                                                      "its search paths: not read"))
            return searched
        recipe_path, function = target
        try:
            text = engine.project.interpreter_for(recipe_path).finder.load(recipe_path).mblint_text
        except SourceError as error:
            engine.syntax_finding(error, report)
            return searched | {recipe_path}
        report.recipes += 1
        before = len(report.findings)
        display = engine.project_display(path)
        job = Job(frozenset((display, engine.project_display(recipe_path))), where=Origin(display, 1, 1, 1, 2, "override"),
                  about=f"the job of {engine.project_display(recipe_path)}::{function} with the override file {display}",
                  recipe=recipe_path, function=function, override_files=(path,), overrides=engine.options.dotlist)
        cfg = engine.check_job(job, text, report)
        linted = engine.editable_frozen()
        for finding in report.findings[before:]:  # the recipe's own problems, in this job too
            if cfg is not None:
                finding.fixes = fixes_applied_here(finding, cfg, linted)
            in_project_place(finding, job)
        name_the_job(report.findings[before:], job.where, job.about)
        return engine.dependencies(recipe_path) | {recipe_path.resolve()} | searched

    def unpaired(self, path: Path, unpaired, report: "FileResult") -> None:
        """An override file paired with no recipe is a SY005 finding on its first section;
        any other YAML file is only counted as not analysed."""
        engine = self.engine
        message = unpaired.message()
        if unpaired.looks_like_override:
            engine.not_analysed_finding(path, unpaired.line, 1, len(unpaired.override_keys[0]), message, report)
        else:
            report.not_analysed.append([engine.project_display(path), message])


def fixes_applied_here(finding: "Finding", cfg: "EffectiveConfig", linted: frozenset[str]) -> tuple:
    """``finding.fixes`` as ``--fix`` applies them in a run that lints ``linted``: with the
    recipe's file not linted, it edits only the override files being linted (mblint/fix/plan.py),
    so a fix that needs an edit elsewhere is not shown, nor counted as fixable (its alternatives,
    which are advice, are)."""
    if cfg.recipe.path in linted:
        return finding.fixes

    def applied(intent) -> bool:
        if intent.action in ("rename", "remove"):
            return finding.location.path in linted
        last = cfg.last_origin(intent.field)
        return last is not None and last.kind == "override" and last.path in linted

    if all(applied(intent) for intent in finding.applicable_fixes):
        return finding.fixes
    return tuple(intent for intent in finding.fixes if intent.alternative)


def find_recipe(engine: "Services", pairing: str, near: Path, searched: set[Path] | None = None) -> tuple[Path, str] | None:
    """``path::function``, ``module::function``, or a recipe name that
    ``megatron.bridge.recipes`` exports (``llama32_1b_peft_config``). ``searched`` gets the
    places looked at before the answer (and the modules read to find a name)."""
    searched = set() if searched is None else searched
    if "::" not in pairing:
        interp = engine.project.interpreter_for(near)
        found = engine.readers.launch.lookup(interp).find(pairing.strip(), searched)
        return (found[0], found[1]) if found else None
    where, function = pairing.rsplit("::", 1)
    candidates = [Path(where), near.parent / where]
    for candidate in candidates:
        if candidate.is_file():
            return candidate, function
        searched.add(candidate)
    interp = engine.project.interpreter_for(near)
    found = interp.finder.find(where, searched)
    return (found, function) if found else None
