"""Run-level results: what a whole ``mblint check`` run wrote, kept beside the per-file result
cache (mblint.cache) and written out again when the same command runs on unchanged input,
without importing the engine, nor (``served``, from the console script) the command line.

An entry is found by a key of everything the output depends on that is not a file: mblint's
version, the Python running it and its import path (with the state of its folders, as the
plugin catalog keys them), the working folder, the command's arguments as given, the
environment variables mblint and click read (``ENVIRONMENT_VARIABLES``, ``*_COMPLETE``), and
whether stdout and stderr are terminals (colour) with their encodings. The arguments as given
decide the options as click parses them, so the console script looks the entry up before
click is imported: only a check run that could record one ever wrote it. It holds the exit
code, every text the run wrote to stdout and stderr, in order, as written (click.echo's own
steps done), and the state of every path the run depended on:

- each linted file and every dependency of its per-file entry (as the result cache records
  them: a dependency that was absent is recorded as absent);
- each folder discovery listed and each other file whose first bytes it read, the paths given;
- in every folder above a linted file, a listed folder or the working folder (by path and by
  real path), the files mblint looks for there: the settings files, the project markers,
  ``.gitignore``, ``.git/info/exclude`` and ``__init__.py`` (present or absent);
- the files quoted by the findings, ``--baseline``, ``--config``;
- the files the plugin catalog depends on (the rule packs) and the modules of mblint that ran.

A path is unchanged while it has the stat signature it had (size, mtime, ctime, inode; a
folder's change with each entry added, removed or renamed), or is still absent, or (``.git``,
``__init__.py``, which only need to exist) still exists. Nothing is read to check an entry but
the entry itself. A signature changed within ``RACY_WINDOW_NS`` before the run started
(mblint.cache.racy) cannot stand for the content the run read: such a run stores no entry.

Runs with side effects or input that is not a file never read nor write one (``--fix``,
``--diff``, ``--write-baseline``, ``--output-*``, stdin, ``--no-cache``, ``--recipe``); nor
is a run that exits 2 recorded. A damaged entry (not JSON, wrong types, too large) is a miss.
The folder keeps at most ``MAX_RUN_RESULTS`` entries, the oldest removed first.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from mblint import __version__
from mblint.cache import (ABSENT, blake2b, cache_folder, environment_key, folder_identity, make_cache_folder,
                          project_root, racy, stat_signature, write_entry)
from mblint.paths import read_json

ENTRY_PREFIX = "run-"
MAX_RUN_RESULTS = 8
MAX_ENTRY_BYTES = 64_000_000
EXISTS = "exists"  # a path that only needs to exist
# Every environment variable mblint reads (tests/test_run_results.py finds them in mblint/).
ENVIRONMENT_VARIABLES = ("MBLINT_CACHE_DIR", "GITHUB_ACTIONS", "NO_COLOR", "FORCE_COLOR", "TERM", "HF_HUB_CACHE",
                         "HF_HOME", "XDG_CACHE_HOME", "HOME")
EXISTENCE_ONLY = (".git", "__init__.py")


# The arguments and key of the command ``served`` found no current result for: the process
# goes on to run it, and records its result under that key, not built again.
_MISSED: tuple[tuple[str, ...], str] | None = None


class RunResults:
    """The run-level result of one command (``args``: its arguments as given) in the cache
    folder a check run in the working folder uses (``cache_dir``: ``--cache-dir``); ``key``:
    its ``run_key``, when already built."""

    def __init__(self, args: list[str], cache_dir: str | None, key: str | None = None) -> None:
        self.started_ns = time.time_ns()
        root = Path(os.path.realpath(cache_dir)) if cache_dir else None
        self.folder = cache_folder(project_root(Path.cwd()), root)
        self.key = run_key(args) if key is None else key

    @classmethod
    def after_served(cls, args: list[str], cache_dir: str | None) -> "RunResults":
        """The run-level result of the command this process runs, with the key ``served``
        built for it when it looked the same arguments up."""
        global _MISSED
        missed, _MISSED = _MISSED, None
        return cls(args, cache_dir, missed[1] if missed is not None and missed[0] == tuple(args) else None)

    def _entry_path(self) -> str | None:
        identity = folder_identity(self.folder)
        if identity is None:
            return None
        name = blake2b(f"{self.key}|{identity}".encode(), digest_size=16).hexdigest()
        return os.path.join(self.folder, f"{ENTRY_PREFIX}{name}.json")

    def replay(self, write) -> int | None:
        """Write what the recorded run wrote (``write(err, text)`` for each text, in order) and
        return its exit code; None, writing nothing, when there is no entry for the command or
        its input changed."""
        entry_path = self._entry_path()
        if entry_path is None:
            return None
        try:
            entry = read_json(entry_path, MAX_ENTRY_BYTES, follow_links=False)
        except (OSError, ValueError):
            return None
        if not _usable(entry, self.key):
            return None
        for err, text in entry["output"]:
            write(err, text)
        return entry["exit"]

    def store(self, code: Any, output: list | None, inputs: dict | None) -> None:
        """Record a run that exited with ``code`` after writing ``output`` ([err, text] of each
        write; None: not recordable), given what it depended on (``run_inputs``; None: not
        recordable)."""
        if code not in (0, 1) or output is None or inputs is None:
            return
        if any(isinstance(record, list) and racy(record, self.started_ns) for record in inputs.values()):
            return
        try:
            make_cache_folder(self.folder)
        except OSError:
            return
        write_entry(self._entry_path(), {"key": self.key, "exit": code, "output": output, "deps": inputs})
        _keep_newest(self.folder)


def served(args: list[str]) -> int | None:
    """For the console script, before click is imported: write what the recorded run of the
    command ``args`` wrote, straight to sys.stdout and sys.stderr, and return its exit code;
    None, writing nothing, when there is no current entry, or when a stream is one click would
    not write to as it is (no encoding, or ASCII: click re-wraps those; a Windows console)."""
    if sys.platform == "win32" or not all(_writable_as_is(stream) for stream in (sys.stdout, sys.stderr)):
        return None
    try:
        results = RunResults(args, _cache_dir(args))
    except (OSError, ValueError):
        return None

    def write(err: bool, text: str) -> None:
        stream = sys.stderr if err else sys.stdout
        stream.write(text)
        stream.flush()

    try:
        code = results.replay(write)
    except BrokenPipeError:  # the reader went away (| head): as click ends such a run
        return 1
    if code is None:
        global _MISSED
        _MISSED = (tuple(args), results.key)
    return code


def _writable_as_is(stream) -> bool:
    encoding = getattr(stream, "encoding", None)
    return bool(encoding) and getattr(stream, "errors", None) is not None and "ascii" not in encoding.lower()


def _cache_dir(args: list[str]) -> str | None:
    """``--cache-dir`` among ``args``, else ``MBLINT_CACHE_DIR``. Only where to look: an entry
    is keyed by the arguments themselves, so a wrong guess is a miss, never another command's
    output."""
    for index, arg in enumerate(args):
        if arg == "--":
            break
        if arg == "--cache-dir" and index + 1 < len(args):
            return args[index + 1]
        if arg.startswith("--cache-dir="):
            return arg.partition("=")[2]
    return os.environ.get("MBLINT_CACHE_DIR") or None


def run_key(args: list[str]) -> str:
    def stream_state(stream) -> list:
        try:
            return [stream.isatty(), getattr(stream, "encoding", None), getattr(stream, "errors", None)]
        except (AttributeError, ValueError):  # no stream, or a closed one
            return [None, None, None]

    environment = {name: os.environ.get(name) for name in ENVIRONMENT_VARIABLES}
    environment.update((name, value) for name, value in os.environ.items() if name.endswith("_COMPLETE"))  # click's
    return json.dumps({
        "mblint": __version__, "python": [sys.version, sys.executable], "path": environment_key(),
        "cwd": os.getcwd(), "args": list(args), "environment": environment,
        "streams": [stream_state(sys.stdout), stream_state(sys.stderr)],
    }, sort_keys=True)


def _usable(entry: Any, key: str) -> bool:
    """``entry`` is a well-formed run-level result for ``key`` whose inputs are unchanged."""
    try:
        if entry["key"] != key or entry["exit"] not in (0, 1) or isinstance(entry["exit"], bool):
            return False
        for err, text in entry["output"]:
            if not (isinstance(err, bool) and isinstance(text, str)):
                return False
        return all(_unchanged(path, record) for path, record in entry["deps"].items())
    except (KeyError, TypeError, ValueError, AttributeError):
        return False


def _unchanged(path: str, record: Any) -> bool:
    if not os.path.isabs(path):
        return False
    if record == ABSENT:
        return not os.path.lexists(path)
    if record == EXISTS:
        return os.path.lexists(path)
    return isinstance(record, list) and len(record) == 4 and stat_signature(path) == record


def _record(path: str, existence_only: bool = False) -> Any:
    """What ``path`` is now: its stat signature, ABSENT, EXISTS; None when it cannot be told
    (a dangling link)."""
    if existence_only:
        return EXISTS if os.path.lexists(path) else ABSENT
    signature = stat_signature(path)
    if signature is None:
        return None if os.path.lexists(path) else ABSENT
    return signature


def run_inputs(engine, report, given: list[str], files: list[str]) -> dict | None:
    """Every path the output of ``engine``'s last run (``report``) depends on, with its state
    now; ``given``: the paths on the command line; ``files``: other files the command read
    (``--baseline``, ``--config``). None when the run cannot be recorded: no result cache, no
    plugin catalog, a path whose state cannot be told."""
    cache, found = engine.result_cache, engine.discovered
    if cache is None or found is None or not engine.rule_run.catalog_files:
        return None
    cwd = os.getcwd()
    inputs: dict[str, Any] = {}
    for dep, (digest, signature) in cache.records.items():
        inputs[dep] = ABSENT if digest == ABSENT else signature
    paths = [*given, *files, *found.folders, *found.examined, *(path for path, _ in found.unreadable),
             *(finding.location.path for finding in report.findings), *engine.rule_run.catalog_files,
             *_modules_run()]
    for path in paths:
        path = os.path.join(cwd, path)
        if path not in inputs:
            inputs[path] = _record(path)
    folders = {cwd, *found.folders, *(os.path.dirname(path) for path in cache.linted),
               *(path if os.path.isdir(path) else os.path.dirname(path) for path in given)}
    for folder in _above(os.path.join(cwd, folder) for folder in folders):
        for name in _looked_up_names():
            path = os.path.join(folder, name)
            if path not in inputs:
                inputs[path] = _record(path, existence_only=name in EXISTENCE_ONLY)
    return None if any(record is None for record in inputs.values()) else inputs


def _looked_up_names() -> tuple[str, ...]:
    """The files mblint looks for in a folder above a path: settings files, project markers
    (mblint.paths and mblint.cache), git's ignore files, a package's ``__init__.py``."""
    from mblint.cache import PROJECT_MARKERS as CACHE_MARKERS
    from mblint.paths import PROJECT_MARKERS
    from mblint.settings import SETTINGS_FILES

    names = (*SETTINGS_FILES, *PROJECT_MARKERS, *CACHE_MARKERS, ".gitignore", ".git/info/exclude", "__init__.py")
    return tuple(dict.fromkeys(names))


def _above(folders) -> set[str]:
    """Each folder, by path and by real path, and every folder above them."""
    found: set[str] = set()
    for folder in folders:
        for start in {os.path.normpath(folder), os.path.realpath(folder)}:
            current = start
            while current not in found:
                found.add(current)
                parent = os.path.dirname(current)
                if parent == current:
                    break
                current = parent
    return found


def _modules_run() -> list[str]:
    """The files of mblint's modules loaded in this process."""
    return [module.__file__ for name, module in list(sys.modules.items())
            if (name == "mblint" or name.startswith("mblint.")) and getattr(module, "__file__", None)]


def _keep_newest(folder: Path) -> None:
    """Remove all but the ``MAX_RUN_RESULTS`` newest run-level results in ``folder``."""
    try:
        entries = [entry for entry in os.scandir(folder)
                   if entry.name.startswith(ENTRY_PREFIX) and entry.name.endswith(".json")
                   and entry.is_file(follow_symlinks=False)]
        entries.sort(key=lambda entry: entry.stat(follow_symlinks=False).st_mtime_ns, reverse=True)
    except OSError:
        return
    for entry in entries[MAX_RUN_RESULTS:]:
        try:
            os.unlink(entry.path)
        except OSError:
            pass
