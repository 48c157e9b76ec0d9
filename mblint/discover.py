"""Paths in, the files to read out."""

from __future__ import annotations

import fnmatch
import functools
import os
import re
import stat
from pathlib import Path
from typing import Callable

from mblint.paths import absolute, read_head

PYTHON_SUFFIXES = (".py",)
YAML_SUFFIXES = (".yaml", ".yml")
SHELL_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")
READABLE_SUFFIXES = PYTHON_SUFFIXES + YAML_SUFFIXES + SHELL_SUFFIXES
DEFAULT_EXCLUDES = (
    ".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", "node_modules",
    "build", "dist", ".mblint_cache", ".mypy_cache", ".pytest_cache", ".ruff_cache", "*.egg-info",
)


class Discovered:
    """What discovery found. ``unreadable``: (path, reason) of files named like a Python or
    YAML file but not a readable regular file (a symlink loop, a dangling link, a FIFO or
    device); never opened, reported as SY001. ``sizes``: bytes of each file found, when stat
    gave them. ``link_modes``: the ``os.lstat`` mode of each path given, when it could be read
    (the settings look-up asks it of every file). ``folders``: the folders listed;
    ``examined``: the other files whose first bytes were read (a shell ``#!`` line?)."""

    __slots__ = ("python", "yaml", "scripts", "missing", "problems", "unreadable", "sizes", "link_modes", "folders",
                 "examined")

    def __init__(self) -> None:
        self.python: list[Path] = []
        self.yaml: list[Path] = []
        self.scripts: list[Path] = []  # launch scripts: *.sh, *.sbatch, *.slurm, a shell shebang
        self.missing: list[str] = []
        self.problems: list[str] = []
        self.unreadable: list[tuple[Path, str]] = []
        self.sizes: dict[Path, int] = {}
        self.link_modes: dict[Path, int] = {}
        self.folders: list[str] = []
        self.examined: list[Path] = []


MAX_GITIGNORE_BYTES = 1_000_000  # a .gitignore larger than this is not read (bounded work)


class GitIgnore:
    """What git ignores in one work tree (the folder holding ``.git``), as ``git check-ignore``
    decides it: each folder's ``.gitignore`` applies to the paths below it, a deeper file's
    rules before a shallower one's, the last matching pattern of a file wins (``!`` re-includes),
    then ``.git/info/exclude``. Patterns are matched by ``pathspec``'s git-ignore rules. A folder
    git ignores is not walked into, so nothing below it is re-included (as in git). Only files
    that ``allows`` (the run's confinement) admits are read, each at most MAX_GITIGNORE_BYTES."""

    def __init__(self, root: Path, allows=None) -> None:
        self.root = root
        self.allows = allows
        self._specs: dict[Path, object] = {}
        self._exclude = self._read(root / ".git" / "info" / "exclude")

    @classmethod
    def around(cls, folder: Path, allows=None) -> "GitIgnore | None":
        """The work tree holding ``folder``, or None when it is in none."""
        folder = Path(os.path.abspath(folder))
        for candidate in (folder, *folder.parents):
            if os.path.lexists(candidate / ".git"):
                return cls(candidate, allows)
        return None

    def _read(self, path: Path):
        from mblint.paths import read_regular

        if self.allows is not None and not self.allows(path):
            return None
        try:
            lines = read_regular(path, MAX_GITIGNORE_BYTES).decode("utf-8", "replace").splitlines()
        except (OSError, ValueError):
            return None
        if not any(line.strip() and not line.startswith("#") for line in lines):
            return None
        from pathspec import GitIgnoreSpec

        return GitIgnoreSpec.from_lines(lines)

    def _spec(self, folder: Path):
        if folder not in self._specs:
            self._specs[folder] = self._read(folder / ".gitignore")
        return self._specs[folder]

    def ignored(self, path: Path, is_dir: bool) -> bool:
        path = Path(os.path.abspath(path))
        if path == self.root or self.root not in path.parents:
            return False
        tail = "/" if is_dir else ""
        folder = path.parent
        while True:
            spec = self._spec(folder)
            if spec is not None:
                decided = spec.check_file(path.relative_to(folder).as_posix() + tail).include
                if decided is not None:
                    return decided
            if folder == self.root or folder == folder.parent:
                break
            folder = folder.parent
        if self._exclude is not None and folder == self.root:
            return bool(self._exclude.check_file(path.relative_to(self.root).as_posix() + tail).include)
        return False


def discover(paths: list[str], excludes: tuple[str, ...] = (), force_exclude: bool = True,
             cwd: str | None = None, allows=None) -> Discovered:
    """``cwd``: the working folder, when the caller has it. Folders are walked without what
    their git work tree ignores (``.gitignore``); ``allows``: which files may be read (the
    run's confinement)."""
    found = Discovered()
    patterns = DEFAULT_EXCLUDES + tuple(excludes)
    seen: set[str] = set()
    for raw in paths:
        path = Path(raw)
        try:
            status = os.lstat(path)
            found.link_modes[path] = status.st_mode
            if stat.S_ISLNK(status.st_mode):
                status = os.stat(path)
        except (OSError, ValueError):  # missing, a dangling link, a loop...: pathlib says which
            status = None
        if status is None and not path.exists() and not path.is_symlink():
            if _stands_in(path):  # the source read from stdin, for a file not (yet) on disk
                _add(path, found, seen, explicit=True, cwd=cwd)
            else:
                found.missing.append(raw)
            continue
        if stat.S_ISDIR(status.st_mode) if status is not None else path.is_dir():
            gitignore = GitIgnore.around(path, allows)
            if gitignore is not None and gitignore.ignored(path, is_dir=True):
                gitignore = None  # a folder git ignores, named on the command line: walked whole
            _walk(path, patterns, found, seen, cwd, gitignore)
        elif not (force_exclude and is_excluded(path, patterns)):
            _add(path, found, seen, explicit=True, status=status, cwd=cwd)
    return found


def import_root_holding(path: Path, roots, given: list[str]) -> Path | None:
    """The search path (an import root: a vendored Megatron-Bridge, a shared package) holding
    ``path``, unless one of the paths ``given`` on the command line is that folder or inside
    it: what a run reads as a dependency is not linted as the project's own code."""
    real = os.path.realpath(path)
    for root in roots:
        top = os.path.realpath(root)
        if _inside(real, top) and not any(_inside(os.path.realpath(p), top) for p in given):
            return Path(root)
    return None


def _inside(real: str, top: str) -> bool:
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def is_excluded(path: Path, patterns: tuple[str, ...]) -> bool:
    text = path.as_posix()
    slashed, plain = _split_patterns(patterns)
    if slashed and _whole_path_matcher(slashed)(os.path.normcase(text)):
        return True
    folder, slash, name = text.rpartition("/")
    if name not in (".", "..") and _name_excluded(name, plain):
        return True
    return bool(slash) and _folder_excluded(folder, plain)


@functools.lru_cache(maxsize=64)
def _split_patterns(patterns: tuple[str, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the patterns with a slash, matched against the whole path; those without, matched
    against each path component)."""
    return tuple(p for p in patterns if "/" in p), tuple(p for p in patterns if "/" not in p)


@functools.lru_cache(maxsize=64)
def _whole_path_matcher(slashed: tuple[str, ...]):
    """Matches a POSIX path that a pattern with a slash matches, below a folder (``*/p``) or
    as a folder (``p/*``): all patterns in one expression, compiled once."""
    return _union(form for pattern in slashed for form in (pattern, f"*/{pattern}", f"{pattern}/*"))


def _union(patterns) -> Callable[[str], re.Match | None]:
    """``fnmatch`` of all ``patterns`` at once (``.match`` of one compiled expression)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(p))})" for p in patterns)).match


@functools.lru_cache(maxsize=4096)
def _folder_excluded(folder: str, plain: tuple[str, ...]) -> bool:
    """Some component of ``folder`` (a POSIX path) matches one of the ``plain`` patterns; the
    files of one folder share the answer."""
    return any(_name_excluded(part, plain) for part in folder.split("/") if part not in (".", ".."))


@functools.lru_cache(maxsize=4096)
def _name_excluded(name: str, plain: tuple[str, ...]) -> bool:
    """One path component against the patterns without a slash; the same folder names recur
    on every path."""
    literal, wild = _literal_patterns(plain)
    name = os.path.normcase(name)
    return name in literal or (wild is not None and wild(name) is not None)


@functools.lru_cache(maxsize=64)
def _literal_patterns(patterns: tuple[str, ...]):
    """(the patterns without ``*``, ``?`` or ``[``, which match only their own text, as
    ``fnmatch`` compares them; a matcher of the others, or None)."""
    wild = tuple(p for p in patterns if any(c in p for c in "*?["))
    return frozenset(os.path.normcase(p) for p in patterns if p not in wild), _union(wild) if wild else None


def _walk(root: Path, patterns: tuple[str, ...], found: Discovered, seen: set[str], cwd: str | None,
          gitignore: GitIgnore | None = None) -> None:
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
        found.folders.append(folder)
        dirs[:] = sorted(d for d in dirs if not is_excluded(folder_path / d, patterns)
                         and not (gitignore and gitignore.ignored(folder_path / d, is_dir=True)))
        for name in sorted(files):
            path = folder_path / name
            if not is_excluded(path, patterns) and not (gitignore and gitignore.ignored(path, is_dir=False)):
                _add(path, found, seen, explicit=False, cwd=cwd)


def _add(path: Path, found: Discovered, seen: set[str], explicit: bool, status: os.stat_result | None = None,
         cwd: str | None = None) -> None:
    """``status``: ``os.stat(path)`` when already asked."""
    key = absolute(path, cwd)
    if key in seen:
        return
    suffix = path.suffix
    if suffix in READABLE_SUFFIXES and not (explicit and _stands_in(path)):
        reason = _not_regular(path, found.sizes, status)
        if reason:
            seen.add(key)
            found.unreadable.append((path, reason))
            return
    if suffix in PYTHON_SUFFIXES:
        seen.add(key)
        found.python.append(path)
    elif suffix in YAML_SUFFIXES:
        seen.add(key)
        found.yaml.append(path)
    elif suffix in SHELL_SUFFIXES or ((not suffix or explicit) and _examined(path, found)):
        seen.add(key)
        found.scripts.append(path)
    elif explicit:
        found.problems.append(f"{path}: not a Python, YAML or shell file; skipped")


def _examined(path: Path, found: Discovered) -> bool:
    """``_shell_shebang``, the file kept in ``found.examined``."""
    found.examined.append(path)
    return _shell_shebang(path)


def _stands_in(path: Path) -> bool:
    """A text stands in for ``path`` (mblint.extract.modules.SOURCE_OVERLAY: the source read
    from stdin, or a fix being checked)."""
    from mblint.extract.modules import SOURCE_OVERLAY

    return bool(SOURCE_OVERLAY) and path.resolve() in SOURCE_OVERLAY


def _shell_shebang(path: Path) -> bool:
    """A regular file whose first line is a shell's ``#!`` line. A symbolic link is not looked
    into: its target may be outside the project (it is linted where it is, by its suffix)."""
    from mblint.readers.launch import is_shell_script

    try:
        head = read_head(path, 128, follow_links=False)  # a link is never a launch script
    except (OSError, ValueError):
        return False
    return head.startswith(b"#!") and is_shell_script(path, head)


def _not_regular(path: Path, sizes: dict[Path, int], status: os.stat_result | None = None) -> str | None:
    """Why ``path`` cannot be read as a file, or None when it is a regular file (whose size
    goes to ``sizes``)."""
    if status is None:
        try:
            status = os.stat(path)
        except OSError as error:
            return f"cannot read file: {error.strerror or error}"
    if not stat.S_ISREG(status.st_mode):
        return "cannot read file: not a regular file (a FIFO, socket or device)"
    sizes[path] = status.st_size
    return None


class ExplicitFiles:
    """The files named on the command line, resolved only when a settings exclude asks."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = paths
        self._resolved: set[Path] | None = None

    def __contains__(self, path: Path) -> bool:
        if self._resolved is None:
            self._resolved = {Path(p).resolve() for p in self.paths if Path(p).is_file()}
        return path.resolve() in self._resolved


def directive_free(path: Path) -> bool:
    """``path``'s text does not mention "mblint": no suppression comment can be in it."""
    from mblint.extract.modules import MAX_SOURCE_BYTES, SOURCE_OVERLAY
    from mblint.paths import read_regular

    if SOURCE_OVERLAY and path.resolve() in SOURCE_OVERLAY:  # a text standing in for the file (stdin)
        return "mblint" not in SOURCE_OVERLAY[path.resolve()]
    try:  # never a FIFO or device, never past the size limit
        return b"mblint" not in read_regular(path, MAX_SOURCE_BYTES)
    except (OSError, ValueError):
        return False
