"""Paths in, the files to read out."""

from __future__ import annotations

import fnmatch
import functools
import os
from dataclasses import dataclass, field
from pathlib import Path

PYTHON_SUFFIXES = (".py",)
YAML_SUFFIXES = (".yaml", ".yml")
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
    "build", "dist", ".mblint_cache", ".mypy_cache", ".pytest_cache", ".ruff_cache", "*.egg-info",
)


@dataclass
class Discovered:
    python: list[Path] = field(default_factory=list)
    yaml: list[Path] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def discover(paths: list[str], excludes: tuple[str, ...] = (), force_exclude: bool = True) -> Discovered:
    found = Discovered()
    patterns = DEFAULT_EXCLUDES + tuple(excludes)
    seen: set[Path] = set()
    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            found.missing.append(raw)
            continue
        if path.is_dir():
            _walk(path, patterns, found, seen)
        elif not (force_exclude and is_excluded(path, patterns)):
            _add(path, found, seen, explicit=True)
    return found


def is_excluded(path: Path, patterns: tuple[str, ...]) -> bool:
    text = path.as_posix()
    parts = text.split("/")
    for pattern in patterns:
        if "/" in pattern:
            if fnmatch.fnmatch(text, pattern) or fnmatch.fnmatch(text, f"*/{pattern}") or fnmatch.fnmatch(text, f"{pattern}/*"):
                return True
        elif any(_name_matches(part, pattern) for part in parts if part not in (".", "..")):
            return True
    return False


@functools.lru_cache(maxsize=4096)
def _name_matches(name: str, pattern: str) -> bool:
    """One path component against one pattern; the same folder names recur on every path."""
    return fnmatch.fnmatch(name, pattern)


def _walk(root: Path, patterns: tuple[str, ...], found: Discovered, seen: set[Path]) -> None:
    visited_dirs: set[tuple[int, int]] = set()
    for folder, dirs, files in os.walk(root, followlinks=False, onerror=lambda e: found.problems.append(f"{e.filename}: {e.strerror}")):
        folder_path = Path(folder)
        try:
            stat = folder_path.stat()
            key = (stat.st_dev, stat.st_ino)
        except OSError:
            continue
        if key in visited_dirs:
            dirs[:] = []
            continue
        visited_dirs.add(key)
        dirs[:] = sorted(d for d in dirs if not is_excluded(folder_path / d, patterns))
        for name in sorted(files):
            path = folder_path / name
            if not is_excluded(path, patterns):
                _add(path, found, seen, explicit=False)


def _add(path: Path, found: Discovered, seen: set[Path], explicit: bool) -> None:
    key = Path(os.path.abspath(path))
    if key in seen:
        return
    if path.suffix in PYTHON_SUFFIXES:
        seen.add(key)
        found.python.append(path)
    elif path.suffix in YAML_SUFFIXES:
        seen.add(key)
        found.yaml.append(path)
    elif explicit:
        found.problems.append(f"{path}: not a Python or YAML file; skipped")
