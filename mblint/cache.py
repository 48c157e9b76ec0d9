"""A per-file result cache (JSON, never pickle: a cache folder could come from an untrusted
checkout, and reading it must not run anything). An entry is valid while the file's content, the content of every
module its recipes read (base builders, imported constants...), mblint's version, the options
and the rule packs are unchanged. Entries are written atomically, one file each, so concurrent
runs at worst both compute the same entry.

Each dependency is recorded with its content digest and, when safe, its stat signature (size,
mtime, ctime, inode). A dependency whose signature is unchanged is taken as unchanged without
reading it; any other is hashed. ctime moves with every content change and cannot be set
back, so an edit that keeps the size and restores the mtime is still seen. As in git's
"racy git" handling, a file changed shortly before it was recorded (within
``RACY_WINDOW_NS``, more than any file system's timestamp granularity) gets no signature:
a later edit in the same timestamp tick would leave the signature unchanged, so that file is
hashed on every run until its entry is rewritten.

A dependency that did not exist when it was recorded (a Hugging Face ``refs/main`` that names
a config.json this machine does not have, a place an import or a training script was looked
for in vain) is recorded as ``ABSENT``: it is unchanged while nothing exists at that path, and
changed as soon as anything does. A folder a search listed (the training scripts that may load
an override file) is recorded by the digest of its listing (``listing_hash``): it is unchanged
while it holds the same names."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from pathlib import Path
from typing import Any

from mblint import __version__
from mblint.paths import NotRegularFile, open_regular, read_json, read_regular

try:  # the function hashlib.blake2b is, without hashlib loading OpenSSL at start-up
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - other Python implementations
    from hashlib import blake2b

CACHE_DIR_NAME = ".mblint_cache"
GITIGNORE_TEXT = "# created by mblint\n*\n"
RACY_WINDOW_NS = 3_000_000_000
PROJECT_MARKERS = ("pyproject.toml", "mblint.toml", ".git")
ABSENT = "absent"
MAX_OTHER_RESULTS = 3  # results kept for other sets of linted files


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
    try:  # never a FIFO or a device (a dependency replaced by one since it was recorded)
        handle = open_regular(key)
        try:
            hasher = blake2b(digest_size=16)
            for chunk in iter(lambda: os.read(handle, 1 << 20), b""):  # a huge imported file: bounded memory
                hasher.update(chunk)
            digest = hasher.hexdigest()
        finally:
            os.close(handle)
    except NotRegularFile:
        digest = listing_hash(key)
    except (OSError, ValueError):
        digest = None
    if memo is not None:
        memo[key] = digest
    return digest


def listing_hash(folder: str) -> str | None:
    """A digest of the names in ``folder`` and which of them are folders (a search that lists
    it depends on them); None when it is no folder or cannot be listed."""
    try:
        with os.scandir(folder) as entries:
            names = sorted(entry.name + ("/" if entry.is_dir(follow_symlinks=False) else "") for entry in entries)
    except OSError:
        return None
    text = "\0".join(names).encode("utf-8", "surrogateescape")
    return "listing:" + blake2b(text, digest_size=16).hexdigest()


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
    return blake2b("|".join(sorted(parts)).encode(), digest_size=16).hexdigest()


def stat_signature(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


def cache_folder(root: Path, cache_dir: Path | None = None) -> Path:
    """This mblint version's cache folder: in ``cache_dir`` when one is given (``--cache-dir``),
    else in ``.mblint_cache`` at the project root ``root``."""
    return (cache_dir if cache_dir is not None else root / CACHE_DIR_NAME) / __version__


class ResultCache:
    def __init__(self, folder: Path, settings_key: str) -> None:
        self.folder = folder
        self._folder_text = str(self.folder)
        self.settings_key = settings_key
        self.hits = 0
        self.misses = 0
        self.hashes: dict[str, str | None] = {}
        self.signatures: dict[str, list[int] | None] = {}
        self.existing: dict[str, bool] = {}
        self.started_ns = time.time_ns()
        self._identity: str | None = None
        self.linted: frozenset[str] = frozenset()  # the absolute paths this run lints
        # Every dependency of every entry this run used or wrote, as it stands now ([digest,
        # signature]): what a run-level result (mblint.run_results) depends on.
        self.records: dict[str, list] = {}

    def identity(self) -> str | None:
        """``folder_identity`` of the cache folder, asked once it exists."""
        if self._identity is None:
            self._identity = folder_identity(self.folder)
        return self._identity

    def _entry_path(self, path: Path, extra: str) -> str | None:
        identity = self.identity()
        if identity is None:
            return None
        text = f"{os.path.abspath(path)}|{self.settings_key}|{extra}|{identity}"
        name = blake2b(text.encode(), digest_size=16).hexdigest()
        return os.path.join(self._folder_text, name[:2], f"{name}.json")

    def get(self, path: Path, extra: str = "") -> Any | None:
        """The cached result for ``path``; ``extra`` names per-file inputs (its settings file)."""
        entry_path = self._entry_path(path, extra)
        try:
            if entry_path is None:
                raise OSError("no cache folder")
            entry = read_json(entry_path, follow_links=False)
        except (OSError, ValueError):
            self.misses += 1
            return None
        deps = entry.get("deps") if isinstance(entry, dict) else None
        current = self._deps_now(deps) if isinstance(deps, dict) else None
        result = _result_for(entry, self._linted_among(deps)) if current is not None else None
        if result is None or entry.get("settings") != self.settings_key:
            self.misses += 1
            return None
        if current != deps:  # hashed because recent when recorded, old enough now: signed from now on
            entry["deps"] = current
            self._write(entry_path, entry)
        self.records.update(current)
        self.hits += 1
        return result

    def _linted_among(self, deps: dict) -> list[str]:
        """Which of an entry's dependencies this run lints: a finding in a file that is not
        linted is placed at the linted file's call instead, so a result holds only for a run
        that lints the same ones."""
        return sorted(dep for dep in deps if dep in self.linted)

    def miss(self) -> None:
        """An entry that ``get`` returned could not be decoded: it counts as a miss (and is
        rewritten once the file is checked)."""
        self.hits -= 1
        self.misses += 1

    def _deps_now(self, deps: dict) -> dict | None:
        """The dependencies' records as they stand now, None when one changed."""
        current = {}
        for dep, recorded in deps.items():
            current[dep] = self._dep_now(dep, recorded)
            if current[dep] is None:
                return None
        return current

    def _dep_now(self, dep: str, recorded: Any) -> list | None:
        """``recorded`` ([digest, signature or None], or a bare digest, the older format) when
        the dependency is unchanged, with the signature it has now when it had none (it was
        recent when recorded) and is old enough now (``_record``); None when it changed."""
        if isinstance(recorded, list) and len(recorded) != 2:
            return None
        digest, signature = recorded if isinstance(recorded, list) else (recorded, None)
        if not isinstance(digest, str):
            return None
        if digest == ABSENT:
            return None if self._exists(dep) else recorded
        now = self._signature(dep)
        if signature is not None and now == signature:
            return recorded
        if content_hash(Path(dep), self.hashes) != digest:
            return None
        return [digest, now if now is not None and not self._racy(now) else None]

    def _exists(self, dep: str) -> bool:
        """Whether anything is at ``dep`` (asked once per run: entries share absent paths)."""
        if dep not in self.existing:
            self.existing[dep] = os.path.lexists(dep)
        return self.existing[dep]

    def _signature(self, dep: str) -> list[int] | None:
        if dep not in self.signatures:
            self.signatures[dep] = stat_signature(dep)
        return self.signatures[dep]

    def _record(self, dep: str) -> list:
        """[digest, signature]; the signature is taken before the content is read, and left out
        when the file changed too recently for its timestamps to tell a later edit apart."""
        signature = self._signature(dep)
        digest = content_hash(Path(dep), self.hashes)
        if digest is None and not os.path.lexists(dep):
            return [ABSENT, None]
        if signature is None or digest is None or self._racy(signature):
            signature = None
        return [digest, signature]

    def _racy(self, signature: list[int]) -> bool:
        return racy(signature, self.started_ns)

    def put(self, path: Path, deps: set[Path], result: Any, extra: str = "") -> None:
        entry = {
            "settings": self.settings_key,
            "deps": {dep: self._record(dep) for dep in sorted({os.path.abspath(d) for d in (path, *deps)})},
            "result": result,
        }
        entry["linted"] = self._linted_among(entry["deps"])
        self.records.update(entry["deps"])
        try:
            make_cache_folder(self.folder)
        except OSError:
            return  # a read-only project still lints; it just is not cached
        entry_path = self._entry_path(path, extra)
        entry["others"] = self._other_results(entry_path, entry)
        self._write(entry_path, entry)

    def _write(self, entry_text: str | None, entry: dict) -> None:
        write_entry(entry_text, entry)

    def _other_results(self, entry_path: str | None, entry: dict) -> dict:
        """The results the entry at ``entry_path`` keeps for other sets of linted files (a
        pre-commit run and a whole-tree run alternate), while its dependencies are unchanged."""
        try:
            old = read_json(entry_path, follow_links=False) if entry_path else None
        except (OSError, ValueError):
            return {}
        if (not isinstance(old, dict) or old.get("settings") != entry["settings"] or not isinstance(old.get("deps"), dict)
                or old["deps"].keys() != entry["deps"].keys() or self._deps_now(old["deps"]) is None):
            return {}
        others = old.get("others") if isinstance(old.get("others"), dict) else {}
        others = {key: value for key, value in others.items() if isinstance(value, dict)}
        if isinstance(old.get("result"), dict) and isinstance(old.get("linted"), list):
            others[json.dumps(old["linted"])] = old["result"]
        others.pop(json.dumps(entry["linted"]), None)
        return dict(list(others.items())[-MAX_OTHER_RESULTS:])



def write_entry(entry_text: str | None, entry: dict) -> bool:
    """Write ``entry`` at ``entry_text`` atomically; False when it cannot be written (a
    read-only project still lints; it just is not cached) or is no JSON."""
    import tempfile  # only runs that write entries pay for importing it

    temporary = None
    try:
        if entry_text is None:
            raise OSError("no cache folder")
        entry_path = Path(entry_text)
        make_cache_folder(entry_path.parent)
        handle, temporary = tempfile.mkstemp(dir=entry_path.parent, prefix=".tmp-")
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(entry, stream)
        os.replace(temporary, entry_path)
        return True
    except (OSError, TypeError, ValueError):
        if temporary is not None:
            try:
                os.unlink(temporary)
            except OSError:
                pass
        return False


def folder_identity(folder: Path) -> str | None:
    """The device and inode of a cache folder, part of every entry's name: a folder mblint
    made keeps them, while one that came with a checkout (a committed ``.mblint_cache``
    holding forged entries that would hide findings) gets new ones, so its entries are never
    found. None while the folder does not exist."""
    try:
        info = os.lstat(folder)
    except OSError:
        return None
    return f"{info.st_dev}:{info.st_ino}" if stat.S_ISDIR(info.st_mode) else None


def racy(signature: list[int], started_ns: int) -> bool:
    """The file changed too shortly before ``started_ns`` for its timestamps to tell a later
    edit in the same timestamp tick apart: its signature cannot stand for its content."""
    _, mtime_ns, ctime_ns, _ = signature
    return max(mtime_ns, ctime_ns) >= started_ns - RACY_WINDOW_NS


def environment_key() -> list:
    """The import path and the state of its folders (an install or removal changes them)."""
    return [[entry, _mtime(entry)] for entry in sys.path]


def _mtime(path: str) -> int | None:
    try:
        return os.stat(path or ".").st_mtime_ns
    except OSError:
        return None


def _result_for(entry: Any, linted: list[str]) -> dict | None:
    """The entry's result for a run that lints ``linted`` of its dependencies, None if it has none."""
    if not isinstance(entry, dict):
        return None
    if entry.get("linted") == linted and isinstance(entry.get("result"), dict):
        return entry["result"]
    others = entry.get("others")
    result = others.get(json.dumps(linted)) if isinstance(others, dict) else None
    return result if isinstance(result, dict) else None


def cache_folders_to_clean(start: Path) -> list[Path]:
    """The cache folders ``mblint clean`` removes when run in ``start``: the one a check run
    there uses (at the project root) and every ``.mblint_cache`` below ``start``. Symbolic links
    are not followed (one named ``.mblint_cache`` is listed: the link is removed, not its target)."""
    found = [project_root(start) / CACHE_DIR_NAME]
    for folder, subfolders, _ in os.walk(start):
        if CACHE_DIR_NAME in subfolders:
            found.append(Path(folder) / CACHE_DIR_NAME)
        subfolders[:] = [name for name in subfolders if name not in (CACHE_DIR_NAME, ".git")]
    unique = dict.fromkeys(os.path.abspath(folder) for folder in found)
    return [Path(folder) for folder in unique if os.path.lexists(folder)]


_VERSION_FOLDER = re.compile(r"^\d+(\.\d+)*([a-z]+\d*)?(\.(post|dev)\d+)?$")


def is_cache_dir(folder: Path) -> bool:
    """True when ``folder`` (a ``--cache-dir``) holds only what mblint writes there: its
    ``.gitignore`` and folders named like versions. A folder named by mistake (a home folder, a
    shared cache) holds other things and is never removed."""
    try:
        entries = list(os.scandir(folder))
        ours = read_regular(folder / ".gitignore", len(GITIGNORE_TEXT.encode()) + 1) == GITIGNORE_TEXT.encode()
    except (OSError, ValueError):
        return False
    return ours and all(entry.name == ".gitignore" or (entry.is_dir(follow_symlinks=False)
                                                       and _VERSION_FOLDER.match(entry.name))
                        for entry in entries)


def remove_cache_folder(folder: Path) -> None:
    """Delete ``folder`` (a ``.mblint_cache`` folder or a link of that name, or a ``--cache-dir``
    that ``is_cache_dir``); ValueError for any other folder, OSError on failure."""
    if folder.name != CACHE_DIR_NAME and not is_cache_dir(folder):
        raise ValueError(f"{folder} is not a {CACHE_DIR_NAME} folder, nor holds only an mblint cache")
    if folder.is_symlink() or not folder.is_dir():
        folder.unlink()
        return
    import shutil

    shutil.rmtree(folder)


def settings_key(parts: dict) -> str:
    return blake2b(json.dumps(parts, sort_keys=True, default=str).encode(), digest_size=16).hexdigest()


def make_cache_folder(folder: Path) -> None:
    """Create ``folder`` (``<cache>/<version>`` or a folder in it) and the cache's
    ``.gitignore``, never through a symbolic link: a committed ``.mblint_cache`` that links to
    another folder, or a link anywhere in the cache, makes this an OSError (nothing written).
    The folder above the cache's own (the project root, the ``--cache-dir`` parent) is taken
    as it is."""
    cache = _cache_base(folder)
    parts = folder.relative_to(cache.parent).parts
    current = cache.parent
    os.makedirs(current, exist_ok=True)
    for part in parts:
        current = current / part
        try:
            os.mkdir(current)
        except FileExistsError:
            pass
        info = os.lstat(current)
        if not stat.S_ISDIR(info.st_mode):
            raise OSError(f"{current}: not a folder (a symbolic link?); the cache is not written")
        if current == cache:
            _ensure_gitignore(cache)


def _cache_base(folder: Path) -> Path:
    """The cache folder holding ``folder`` (the parent of its version folder)."""
    for candidate in (folder, *folder.parents):
        if candidate.name == __version__:
            return candidate.parent
    return folder.parent


def _ensure_gitignore(folder: Path) -> None:
    """Created only if no file (nor link) of that name exists, never through a link."""
    try:
        handle = os.open(folder / ".gitignore", os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                         0o644)
    except OSError:
        return
    with os.fdopen(handle, "w", encoding="utf-8") as stream:
        stream.write(GITIGNORE_TEXT)


def schema_folder(options: Any, display_root: Path) -> Path:
    """Where schemas derived from a Megatron-Bridge source are kept: beside the result cache
    (kept also with --no-cache, which is about results)."""
    return cache_folder(options.cache_root or project_root(display_root), options.cache_dir) / "schema"


def result_cache(options: Any, display_root: Path, rule_run: Any) -> ResultCache | None:
    """The result cache of a run with ``options`` (None with --no-cache), keyed by everything
    but the files that decides a file's result. Made before the rule pack is first needed: with
    a current catalog in the cache folder, ``rule_run`` needs no rule class for its fingerprint."""
    if not options.use_cache:
        return None
    from mblint.findings import ENCODING

    folder = cache_folder(options.cache_root or project_root(display_root), options.cache_dir)
    fingerprint = rule_run.fingerprint(folder)
    key_options = {k: v for k, v in vars(options).items()
                   if k not in ("use_cache", "cache_root", "cache_dir", "jobs", "settings")}
    resolver = options.settings
    if resolver is not None:
        key_options["settings"] = {"config": str(resolver.config), "isolated": resolver.isolated}
    key = settings_key({"options": key_options, "rules": fingerprint, "encoding": ENCODING,
                        "plugins": rule_run.plugins.versions, "cwd": str(display_root)})
    return ResultCache(folder, key)
