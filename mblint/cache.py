"""A per-file result cache (JSON, never pickle: a cache folder could come from an untrusted
checkout, and reading it must not run anything). An entry is valid while the file's content, the content of every
module its recipes read (base builders, imported constants...), mblint's version, the options
and the rule packs are unchanged. Entries are written atomically, one file each, so concurrent
runs at worst both compute the same entry."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from mblint import __version__

CACHE_DIR_NAME = ".mblint_cache"
PROJECT_MARKERS = ("pyproject.toml", "mblint.toml", ".git")


def project_root(start: Path) -> Path:
    start = start.resolve()
    for folder in (start, *start.parents):
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return start


def content_hash(path: Path, memo: dict | None = None) -> str | None:
    """The file's content digest (computed once per run when a ``memo`` is given)."""
    key = os.path.abspath(path)
    if memo is not None and key in memo:
        return memo[key]
    try:
        with open(key, "rb") as handle:
            hasher = hashlib.blake2b(digest_size=16)
            for chunk in iter(lambda: handle.read(1 << 20), b""):  # a huge imported file: bounded memory
                hasher.update(chunk)
            digest = hasher.hexdigest()
    except OSError:
        digest = None
    if memo is not None:
        memo[key] = digest
    return digest


def rules_fingerprint(rules: list) -> str:
    """Rule classes, and the files that define them (edited rules in a development checkout
    change the fingerprint even when the package version does not)."""
    parts = []
    for rule in rules:
        module = __import__(rule.__module__, fromlist=["_"])
        source = getattr(module, "__file__", "") or ""
        try:
            stat = os.stat(source)
            parts.append(f"{rule.id}:{source}:{stat.st_size}:{stat.st_mtime_ns}")
        except OSError:
            parts.append(f"{rule.id}:{source}")
    return hashlib.blake2b("|".join(sorted(parts)).encode(), digest_size=16).hexdigest()


class ResultCache:
    def __init__(self, root: Path, settings_key: str) -> None:
        self.folder = root / CACHE_DIR_NAME / __version__
        self.settings_key = settings_key
        self.hits = 0
        self.misses = 0
        self.hashes: dict[str, str | None] = {}

    def _entry_path(self, path: Path, extra: str) -> Path:
        text = f"{os.path.abspath(path)}|{self.settings_key}|{extra}"
        name = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        return self.folder / name[:2] / f"{name}.json"

    def get(self, path: Path, extra: str = "") -> Any | None:
        """The cached result for ``path``; ``extra`` names per-file inputs (its settings file)."""
        entry_path = self._entry_path(path, extra)
        try:
            with open(entry_path, encoding="utf-8") as handle:
                entry = json.load(handle)
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(entry, dict) or entry.get("settings") != self.settings_key or not self._deps_unchanged(entry.get("deps", {})):
            self.misses += 1
            return None
        self.hits += 1
        return entry["result"]

    def _deps_unchanged(self, deps: dict[str, str | None]) -> bool:
        return all(content_hash(Path(dep), self.hashes) == digest for dep, digest in deps.items())

    def put(self, path: Path, deps: set[Path], result: Any, extra: str = "") -> None:
        entry = {
            "settings": self.settings_key,
            "deps": {os.path.abspath(dep): content_hash(dep, self.hashes) for dep in sorted({Path(os.path.abspath(path)), *deps})},
            "result": result,
        }
        entry_path = self._entry_path(path, extra)
        try:
            entry_path.parent.mkdir(parents=True, exist_ok=True)
            _ensure_gitignore(self.folder.parent)
            handle, temporary = tempfile.mkstemp(dir=entry_path.parent, prefix=".tmp-")
            with os.fdopen(handle, "w", encoding="utf-8") as stream:
                json.dump(entry, stream)
            os.replace(temporary, entry_path)
        except OSError:
            pass  # a read-only project still lints; it just is not cached


def settings_key(parts: dict) -> str:
    return hashlib.blake2b(json.dumps(parts, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()


def _ensure_gitignore(folder: Path) -> None:
    ignore = folder / ".gitignore"
    if not ignore.exists():
        try:
            ignore.write_text("# created by mblint\n*\n", encoding="utf-8")
        except OSError:
            pass
