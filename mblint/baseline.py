"""Baselines: accept today's findings, fail only on new ones.

An entry is keyed on (path, rule id, sorted field paths, recipe function) with a count, never
on line or column numbers, so it survives edits that move code. Paths are stored relative to
the baseline file's folder, POSIX style. An entry whose file was checked but which matched
fewer findings than its count is *stale* (the problem was fixed: shrink the baseline).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Iterable

from mblint.findings import Finding
from mblint.paths import read_json

FORMAT_VERSION = 1


class BaselineError(ValueError):
    pass


def recipe_function(finding: Finding) -> str:
    return finding.recipe.rpartition("::")[2] if finding.recipe else ""


def finding_key(finding: Finding, relative_path: str) -> tuple[str, str, tuple[str, ...], str]:
    return (relative_path, finding.rule_id, tuple(sorted(finding.fields)), recipe_function(finding))


class StaleEntry:
    """A baseline entry that no current finding matches."""

    __slots__ = ("path", "rule", "fields", "recipe", "count")

    def __init__(self, path: str, rule: str, fields: tuple[str, ...], recipe: str, count: int) -> None:
        self.path = path
        self.rule = rule
        self.fields = fields
        self.recipe = recipe
        self.count = count

    def __str__(self) -> str:
        where = f" in {self.recipe}" if self.recipe else ""
        fields = f" ({', '.join(self.fields)})" if self.fields else ""
        times = f" x{self.count}" if self.count > 1 else ""
        return f"{self.path}: {self.rule}{fields}{where}{times}"


def _relative(display_path: str, display_root: Path, folder: Path) -> str:
    absolute = (display_root / display_path).resolve()
    try:
        return Path(os.path.relpath(absolute, folder.resolve())).as_posix()
    except ValueError:
        return absolute.as_posix()


def write_baseline(path: Path, findings: Iterable[Finding], display_root: Path) -> int:
    folder = path.resolve().parent
    counts = Counter(finding_key(f, _relative(f.location.path, display_root, folder)) for f in findings)
    entries = [
        {"path": key[0], "rule": key[1], "fields": list(key[2]), "recipe": key[3], "count": count}
        for key, count in sorted(counts.items())
    ]
    document = {"mblint-baseline": FORMAT_VERSION, "entries": entries}
    try:
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as error:
        raise BaselineError(f"{path}: cannot write baseline: {error.strerror or error}") from error
    return sum(counts.values())


def load_baseline(path: Path) -> Counter:
    try:
        document = read_json(path)
        if not isinstance(document, dict) or document.get("mblint-baseline") != FORMAT_VERSION:
            raise BaselineError(f"{path}: not an mblint baseline (version {FORMAT_VERSION})")
        counts: Counter = Counter()
        entries = document.get("entries")
        if not isinstance(entries, list) or not all(isinstance(entry, dict) for entry in entries):
            raise ValueError("'entries' must be a list of objects (path, rule, fields, recipe, count)")
        for entry in entries:
            key = (entry["path"], entry["rule"], tuple(sorted(entry.get("fields", []))), entry.get("recipe", ""))
            count = entry.get("count", 1)
            if type(count) is not int or count < 0:
                raise ValueError(f"count {count!r} is not a whole number")
            counts[key] += count
        return counts
    except OSError as error:
        raise BaselineError(f"{path}: cannot read baseline: {error.strerror or error}") from error
    except (ValueError, KeyError, TypeError, AttributeError) as error:
        if isinstance(error, BaselineError):
            raise
        raise BaselineError(f"{path}: malformed baseline: {error}") from error


def apply_baseline(path: Path, findings: list[Finding], display_root: Path,
                   checked: Iterable[str]) -> tuple[list[Finding], int, list[StaleEntry]]:
    """Findings not covered by the baseline, how many were covered, and stale entries (only
    for files that were checked in this run: a partial run, as pre-commit makes, must not call
    the rest of the baseline stale)."""
    folder = path.resolve().parent
    remaining = load_baseline(path)
    kept, covered = [], 0
    for finding in findings:
        key = finding_key(finding, _relative(finding.location.path, display_root, folder))
        if remaining.get(key, 0) > 0:
            remaining[key] -= 1
            finding.suppressed = True
            covered += 1
        else:
            kept.append(finding)
    checked_rel = {_relative(p, display_root, folder) for p in checked}
    checked_rel |= {_relative(f.location.path, display_root, folder) for f in findings}
    stale = [StaleEntry(key[0], key[1], key[2], key[3], count)
             for key, count in sorted(remaining.items()) if count > 0 and key[0] in checked_rel]
    return kept, covered, stale
