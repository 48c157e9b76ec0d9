"""Linting an editor's document: the text it holds (and that of every other open document)
stands in for the files on disk, and the engine checks it as ``mblint check - --stdin-filename
PATH`` does: the same settings, discovery, pairing and rules, no cache, nothing written. The
configurations of the document's jobs are kept for hover, with the files the result depends on."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from mblint.findings import Finding
from mblint.fix.files import overlay
from mblint.results import FileError


@dataclass
class JobConfig:
    """A job that reached the document: its configuration and how to name it."""

    cfg: object  # mblint.model.EffectiveConfig
    about: str  # "in the job launched at run.sh:3", or "" for the recipe alone


@dataclass
class DocumentLint:
    """What a lint of one document found: its findings (those at its own lines), the errors of
    the run (a rule that crashed, settings that could not be read), its jobs and dependencies."""

    path: Path
    display: str
    version: int | None
    text: str
    findings: list[Finding] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    jobs: list[JobConfig] = field(default_factory=list)
    dependencies: set[str] = field(default_factory=set)  # real paths
    help_uris: dict[str, str] = field(default_factory=dict)
    read: dict[str, int] = field(default_factory=dict)  # real path -> hash of the open text it read

    def finding_for(self, diag) -> Finding | None:
        """The finding a diagnostic of this result stands for (by the identity it carries, else
        by rule and line for a client that does not send a diagnostic's data back)."""
        if diag.source != "mblint":
            return None
        data = diag.data if isinstance(diag.data, dict) else {}
        identity = data.get("identity")
        for finding in self.findings:
            if identity is not None and list(finding.identity()) == list(identity):
                return finding
        if identity is None:
            for finding in self.findings:
                if finding.rule_id == diag.code and finding.location.line == diag.range.start.line + 1:
                    return finding
        return None


def lint_document(make_engine: Callable, path: Path, text: str, version: int | None,
                  open_texts: dict[Path, str]) -> DocumentLint:
    """Check ``text`` as the file ``path``, the other open documents' texts standing in for theirs."""
    engine = make_engine()
    jobs: list[JobConfig] = []
    run_rules = engine.run_rules

    def run_rules_keeping_jobs(cfg, rule_text, report, job=None):
        jobs.append(JobConfig(cfg, job.about if job is not None else ""))
        return run_rules(cfg, rule_text, report, job)

    engine.run_rules = run_rules_keeping_jobs  # as the fix loop captures each job's configuration
    with overlay({**open_texts, path: text}):
        report = engine.check_paths([str(path)])
    display = engine.project_display(path)
    result = DocumentLint(path, display, version, text, jobs=jobs, errors=list(report.errors))
    result.findings = [f for f in report.findings if f.location.path == display and not f.suppressed]
    dependencies = set(engine.file_dependencies.get(path, ()))
    if path.suffix == ".py":  # the Python reader leaves them to the cache, off here: asked of the interpreter
        dependencies |= engine.dependencies(path)
    result.dependencies = {os.path.realpath(dep) for dep in dependencies}
    reported = {finding.rule_id for finding in result.findings}
    result.help_uris = {rule.id: rule.help_uri for rule in engine.rule_run.all_rules
                        if rule.id in reported and getattr(rule, "help_uri", None)}
    return result
