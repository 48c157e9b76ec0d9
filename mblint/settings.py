"""Settings: ``[tool.mblint]`` in ``pyproject.toml`` or the top level of ``mblint.toml``,
found by walking up from each file; the nearest file wins (no merging with parents).

Globs (``exclude``, ``per-file-ignores``, ``pairing``) are relative to the folder holding the
settings file: a pattern without ``/`` matches any single path component (``*.py``,
``generated``), one with ``/`` matches the relative path (``recipes/*.py``, ``conf/**``).
Command-line options override settings: ``--select`` replaces ``select``; ``--ignore`` and
``--extend-select`` add to the settings' lists; ``--fail-on``, ``--world-size`` and
``--megatron-bridge-version`` replace theirs.
"""

from __future__ import annotations

import functools
import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mblint.paths import RealFolders, absolute, read_regular
from mblint.suggestions import suggest

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

SETTINGS_FILES = ("mblint.toml", "pyproject.toml")
SEVERITIES = ("error", "warning", "info")

# key -> (attribute, kind)
KEYS: dict[str, tuple[str, str]] = {
    "select": ("select", "ids"),
    "extend-select": ("extend_select", "ids"),
    "ignore": ("ignore", "ids"),
    "per-file-ignores": ("per_file_ignores", "glob-ids"),
    "exclude": ("exclude", "strs"),
    "fail-on": ("fail_on", "severity"),
    "megatron-bridge-version": ("version", "version"),
    "world-size": ("world_size", "positive-int"),
    "search-paths": ("search_paths", "strs"),
    "hf-config-paths": ("hf_config_paths", "strs"),
    "pairing": ("pairing", "glob-str"),
}


class SettingsError(ValueError):
    """A settings file is unreadable or holds an unknown key or a wrong value (exit code 2)."""


@dataclass(frozen=True)
class Settings:
    """The settings of one settings file (``source``; None: the defaults), for the files of its
    folder ``root`` (default: the working folder) and below."""

    source: Path | None = None
    root: Path = field(default_factory=Path.cwd)
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: tuple[str, ...] = ()
    fail_on: str | None = None
    version: str | None = None
    world_size: int | None = None
    search_paths: tuple[str, ...] = ()
    pairing: tuple[tuple[str, str], ...] = ()
    hf_config_paths: tuple[str, ...] = ()

    # ----- per-file questions -----------------------------------------------------------

    def relative(self, path: Path) -> str | None:
        """``path`` relative to the settings folder (POSIX), or None when outside it."""
        try:
            rel = os.path.relpath(os.path.realpath(path), self.root.resolve())
        except ValueError:  # another drive on Windows
            return None
        rel = Path(rel).as_posix()
        return None if rel == ".." or rel.startswith("../") else rel

    def matches(self, path: Path, pattern: str) -> bool:
        rel = self.relative(path)
        return rel is not None and _matches(rel, _glob_forms((pattern,)))

    def is_excluded(self, path: Path) -> bool:
        """``path`` matches a glob of ``exclude`` (its relative path worked out once, every glob
        matched at once)."""
        rel = self.relative(path) if self.exclude else None
        return rel is not None and _matches(rel, _glob_forms(self.exclude))

    def ignored_for(self, path: Path) -> tuple[str, ...]:
        """Rule selectors that ``per-file-ignores`` disables for ``path``."""
        return tuple(s for pattern, ids in self.per_file_ignores if self.matches(path, pattern) for s in ids)

    def pairing_for(self, path: Path) -> str | None:
        """The recipe (``path::function``) an override file is paired with; a path is taken
        relative to the settings folder when such a file exists there."""
        for pattern, target in self.pairing:
            if self.matches(path, pattern):
                where, _, function = target.rpartition("::")
                candidate = self.root / where
                if where and candidate.is_file():
                    return f"{candidate}::{function}"
                return target
        return None

    def resolved_search_paths(self) -> tuple[Path, ...]:
        return tuple((self.root / p).resolve() for p in self.search_paths)

    def resolved_hf_config_paths(self) -> tuple[Path, ...]:
        """Folders of ``ORG/NAME/config.json`` files (Hugging Face model configs)."""
        return tuple((self.root / p).resolve() for p in self.hf_config_paths)

    def to_json(self) -> dict:
        return {
            "source": str(self.source) if self.source else None,
            "select": list(self.select) if self.select is not None else None,
            "extend-select": list(self.extend_select),
            "ignore": list(self.ignore),
            "per-file-ignores": {pattern: list(ids) for pattern, ids in self.per_file_ignores},
            "exclude": list(self.exclude),
            "fail-on": self.fail_on,
            "megatron-bridge-version": self.version,
            "world-size": self.world_size,
            "search-paths": [str(p) for p in self.resolved_search_paths()],
            "hf-config-paths": [str(p) for p in self.resolved_hf_config_paths()],
            "pairing": dict(self.pairing),
        }


# ----- loading ----------------------------------------------------------------------------


MAX_SETTINGS_BYTES = 1_000_000  # a pyproject.toml is a few kB
# Entries of one list or table setting (rule selectors, globs, folders): a project names tens;
# every file is matched against each glob and each unknown selector gets a did-you-mean.
MAX_SETTING_ENTRIES = 1_000


def read_settings_file(path: Path) -> Settings | None:
    """The settings in ``path``; None for a ``pyproject.toml`` without ``[tool.mblint]``."""
    try:
        document = tomllib.loads(read_regular(path, MAX_SETTINGS_BYTES).decode("utf-8"))
    except OSError as error:
        raise SettingsError(f"{path}: cannot read settings: {error.strerror or error}") from error
    except UnicodeDecodeError as error:
        raise SettingsError(f"{path}: cannot read settings: not UTF-8 (byte {error.start})") from error
    except RecursionError as error:
        raise SettingsError(f"{path}: invalid TOML: nested too deeply") from error
    except tomllib.TOMLDecodeError as error:
        raise SettingsError(f"{path}: invalid TOML: {error}") from error
    except ValueError as error:  # not a regular file, too large
        raise SettingsError(f"{path}: cannot read settings: {error}") from error
    if path.name == "pyproject.toml":
        table = document.get("tool", {}).get("mblint")
        if table is None:
            return None
        prefix = "tool.mblint."
    else:
        table = document.get("tool", {}).get("mblint", document) if set(document) == {"tool"} else document
        prefix = ""
    if not isinstance(table, dict):
        raise SettingsError(f"{path}: [{prefix.rstrip('.') or 'mblint'}] must be a table")
    return parse_table(table, path, prefix)


def parse_table(table: dict, path: Path, prefix: str = "") -> Settings:
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            hint = suggest(key, KEYS)
            suggestion = f"; did you mean '{hint}'?" if hint else f" (known: {', '.join(KEYS)})"
            raise SettingsError(f"{path}: unknown setting '{prefix}{key}'{suggestion}")
        attribute, kind = KEYS[key]
        values[attribute] = _convert(value, kind, f"{path}: setting '{prefix}{key}'")
    return Settings(source=path, root=path.parent.resolve(), **values)


def _convert(value: Any, kind: str, where: str) -> Any:
    if isinstance(value, list | dict) and len(value) > MAX_SETTING_ENTRIES:
        raise SettingsError(f"{where} has {len(value):,} entries; at most {MAX_SETTING_ENTRIES:,} are accepted")

    def strs(item: Any) -> tuple[str, ...]:
        if isinstance(item, str):
            item = [item]
        if not isinstance(item, list) or not all(isinstance(v, str) for v in item):
            raise SettingsError(f"{where} must be a list of strings")
        return tuple(v.strip() for v in item if v.strip())

    if kind == "ids":
        return tuple(v.upper() if v[:1].isalpha() and "-" not in v else v for v in strs(value))
    if kind == "strs":
        return strs(value)
    if kind == "glob-ids":
        if not isinstance(value, dict):
            raise SettingsError(f"{where} must be a table of glob = [rule ids]")
        return tuple((glob, _convert(ids, "ids", f"{where}.{glob!r}")) for glob, ids in value.items())
    if kind == "glob-str":
        if not isinstance(value, dict) or not all(isinstance(v, str) and ("::" in v or v.isidentifier())
                                                  for v in value.values()):
            raise SettingsError(f"{where} must be a table of glob = \"path/or/module::function\" or glob = "
                                f"\"recipe_name\"")
        return tuple(value.items())
    if kind == "severity":
        if value not in SEVERITIES:
            raise SettingsError(f"{where} must be one of {', '.join(SEVERITIES)}")
        return value
    if kind == "version":
        if not isinstance(value, (str, float)):
            raise SettingsError(f"{where} must be a string such as \"0.6\"")
        text = str(value)
        return ".".join(text.split(".")[:2])
    if kind == "positive-int":
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise SettingsError(f"{where} must be a positive integer")
        return value
    raise AssertionError(kind)


@functools.lru_cache(maxsize=64)
def _glob_forms(patterns: tuple[str, ...]) -> tuple[str, ...]:
    """The discovery patterns settings globs stand for: relative to the settings' folder
    (``./`` dropped, a trailing ``/`` too), and ``**/x`` also as ``x``."""
    forms = []
    for pattern in patterns:
        pattern = pattern.strip().rstrip("/")
        pattern = pattern[2:] if pattern.startswith("./") else pattern
        forms.append(pattern)
        if pattern.startswith("**/"):
            forms.append(pattern[3:])
    return tuple(forms)


def _matches(rel: str, forms: tuple[str, ...]) -> bool:
    from mblint.discover import is_excluded

    return is_excluded(Path(rel), forms)


class SettingsResolver:
    """Finds the settings for each file (nearest settings file up the tree), with caching.
    ``config`` forces one file for everything; ``isolated`` ignores settings files."""

    def __init__(self, config: Path | None = None, isolated: bool = False) -> None:
        self.config = Path(config) if config else None
        self.isolated = isolated
        self._by_dir: dict[str, Settings] = {}  # real folder -> settings
        self._by_file: dict[Path, Settings | SettingsError | None] = {}
        self._by_path: dict[tuple, Settings] = {}  # (working folder, path as given) -> settings
        self._real_folders: dict = {}  # folder as given -> its real path
        self._by_folder: dict[tuple, Settings] = {}  # folder as given -> settings of its files
        self._real_folders_of = RealFolders().of
        self._default: Settings | None = None

    def default(self) -> Settings:
        if self._default is None:
            self._default = Settings(root=Path.cwd().resolve())
        return self._default

    def for_path(self, path: Path | str, cwd: str | None = None, link_mode: int | None = None) -> Settings:
        """Asked many times per file in a run (rules, world size, suppressions, fail-on):
        answered from memory after the first time. ``cwd``: the working folder, when the
        caller has it; ``link_mode``: ``os.lstat(path).st_mode``, when the caller has it."""
        raw = os.fspath(path)
        cwd = "" if os.path.isabs(raw) else cwd or os.getcwd()
        key = _exact_key(raw, cwd)
        found = self._by_path.get(key)
        if found is None:
            found = self._by_path[key] = self._find(raw, cwd, link_mode)
        return found

    def _find(self, raw: str, cwd: str, mode: int | None = None) -> Settings:
        """``cwd``: the working folder when ``raw`` is relative, else ""; ``mode``: the lstat
        mode of ``raw`` when known."""
        if self.isolated:
            return self.default()
        if self.config is not None:
            return self._load(self.config.resolve(), required=True) or self.default()
        if mode is None:
            try:
                mode = os.lstat(raw).st_mode
            except OSError:
                mode = 0
        if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):  # resolved on its own
            return self._nearest(self._real_folder(raw, mode))
        # A file's settings are those of the folder holding it: one answer per folder
        folder = os.path.dirname(raw)
        key = _exact_key(folder, cwd)
        found = self._by_folder.get(key)
        if found is None:
            found = self._by_folder[key] = self._nearest(self._real_folder(raw, mode, key))
        return found

    def _nearest(self, folder: str) -> Settings:
        """The settings of the nearest settings file in ``folder`` (a real, absolute folder)
        or above it."""
        by_dir = self._by_dir
        visited = []
        found: Settings | None = None
        current = folder
        while True:
            found = by_dir.get(current)
            if found is not None:
                break
            visited.append(current)
            for name in SETTINGS_FILES:
                candidate = os.path.join(current, name)
                if _is_file(candidate):
                    found = self._load(Path(candidate))
                    if found is not None:
                        break
            parent = os.path.dirname(current)
            if found is not None or parent == current:
                break
            current = parent
        found = found or self.default()
        for folder in visited:
            by_dir[folder] = found
        return found

    def _real_folder(self, path: Path | str, mode: int | None = None, key=None) -> str:
        """The resolved folder holding ``path`` (``path`` itself for a folder). Files of one
        folder share the folder's resolution; a symbolic link is resolved on its own.
        ``mode``: ``path``'s ``lstat`` mode when known (0: it cannot be read); ``key``:
        ``_exact_key`` of the folder holding ``path`` when known."""
        raw = os.fspath(path)
        if mode is None:
            try:
                mode = os.lstat(raw).st_mode
            except OSError:
                mode = 0
        if stat.S_ISLNK(mode) or stat.S_ISDIR(mode):
            real = os.path.realpath(raw)  # unlike Path.resolve, never raises on a symlink loop
            return real if os.path.isdir(real) else os.path.dirname(real)
        parent = os.path.dirname(raw)
        if key is None:
            key = _exact_key(parent)
        real = self._real_folders.get(key)
        if real is None:
            real = self._real_folders[key] = (os.path.realpath(parent) if ".." in parent.split(os.sep)
                                              else self._real_folders_of(absolute(parent, _cwd_of(key))))
        return real

    def _load(self, path: Path, required: bool = False) -> Settings | None:
        """The settings in ``path``, read once per run (a file in error too: its error is
        raised again for every file it governs, never read again)."""
        if path not in self._by_file:
            try:
                if required and not path.is_file():
                    raise SettingsError(f"{path}: no such settings file")
                settings = read_settings_file(path)
                if settings is None and required:
                    raise SettingsError(f"{path}: no [tool.mblint] table")
            except SettingsError as error:
                settings = error
            self._by_file[path] = settings
        found = self._by_file[path]
        if isinstance(found, SettingsError):
            raise SettingsError(str(found))
        return found


def _is_file(path: str) -> bool:
    """``os.path.isfile``; a missing file (the usual answer) costs no exception."""
    return os.access(path, os.F_OK) and os.path.isfile(path)


def _exact_key(path: Path | str, cwd: str | None = None) -> str | tuple[str, str]:
    """A memo key for ``path`` as given: no normalisation across symbolic links; a relative
    path also depends on the working folder (``cwd`` when the caller has it: "" for an
    absolute path)."""
    raw = os.fspath(path)
    if cwd is None:
        cwd = "" if os.path.isabs(raw) else os.getcwd()
    return (cwd, raw) if cwd else raw


def _cwd_of(key: str | tuple[str, str]) -> str | None:
    """The working folder an ``_exact_key`` holds: None for an absolute path's key."""
    return key[0] if isinstance(key, tuple) else None


def render_settings(settings: Settings, path: str) -> str:
    """``mblint settings PATH`` in TOML-like text."""
    data = settings.to_json()
    source = data.pop("source")
    lines = [f"# settings in force for {path}", f"# from {source or '(defaults: no settings file found)'}"]
    tables = {}
    for key, value in data.items():
        if isinstance(value, dict):
            tables[key] = value
            continue
        lines.append(f"# {key} = (not set)" if value is None else f"{key} = {_toml(value)}")
    for key, table in tables.items():
        lines.append(f"\n[{key}]")
        for sub, value in table.items():
            lines.append(f"{_toml(sub)} = {_toml(value)}")
    return "\n".join(lines) + "\n"


def _toml(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    import json

    return json.dumps(str(value))
