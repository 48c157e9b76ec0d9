"""Absolute paths, whole-file reads, and real paths of folders kept for a run."""

from __future__ import annotations

import os
import stat


def absolute(path, cwd: str | None = None) -> str:
    """``os.path.abspath(path)``; ``cwd``: the working folder when the caller already has it
    (each ``os.getcwd`` is a system call)."""
    raw = os.fspath(path)
    if cwd is None:
        return os.path.abspath(raw)
    return os.path.normpath(raw if os.path.isabs(raw) else os.path.join(cwd, raw))


class RealFolders:
    """``os.path.realpath`` of absolute folders, each built on its parent's answer: one lstat
    per folder instead of one per component of every path asked. A folder whose path holds
    ".." is resolved whole (a ".." after a symbolic link leaves the link's target)."""

    def __init__(self) -> None:
        self._known: dict[str, str] = {}

    def of(self, folder: str) -> str:
        if ".." in folder.split(os.sep):
            return os.path.realpath(folder)
        known = self._known.get(folder)
        if known is None:
            parent = os.path.dirname(folder)
            if parent == folder:
                known = folder
            else:
                try:
                    linked = stat.S_ISLNK(os.lstat(folder).st_mode)
                except OSError:
                    linked = True  # let realpath say what a missing folder resolves to
                known = os.path.realpath(folder) if linked else os.path.join(self.of(parent), os.path.basename(folder))
            self._known[folder] = known
        return known


class Confinement:
    """The folders mblint may read for a run: the project (the repository, or the folder its
    settings or cache markers mark), each folder named on the command line, the search paths
    and the Megatron-Bridge installations on ``sys.path``. A file whose real path is outside
    all of them is never read, so never quoted: a pairing comment, an import, a search path
    from settings or a symbolic link committed to a pull request cannot reach ``/etc/passwd``
    or a credentials file."""

    def __init__(self, roots=()) -> None:
        self.roots: list[str] = []
        for root in roots:
            self.add(root)

    def add(self, root) -> None:
        real = os.path.realpath(root)
        if real not in self.roots:
            self.roots.append(real)

    def allows(self, path, real: str | None = None) -> bool:
        """``real``: the real path of ``path`` when the caller has it."""
        real = os.fspath(real) if real is not None else os.path.realpath(path)
        return any(real == root or real.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)


PROJECT_MARKERS = ("pyproject.toml", "mblint.toml", ".git")


def project_root(start) -> str:
    """The repository holding ``start`` (the nearest folder above with ``.git``), else the
    nearest folder with a settings file, else ``start`` (a folder, absolute)."""
    return ProjectRoots().of(os.path.realpath(start))


class ProjectRoots:
    """``project_root`` of the folders of one run: each folder's nearest marker is found from
    its parent's answer (the folders of the files pre-commit passes share their parents)."""

    def __init__(self) -> None:
        self.real = RealFolders().of
        self._nearest: dict[tuple[str, str], str | None] = {}

    def of(self, start: str) -> str:
        """``project_root`` of ``start`` (an absolute folder)."""
        start = self.real(start)
        for marker in (".git", *PROJECT_MARKERS):
            found = self.nearest_with(start, marker)
            if found is not None:
                return found
        return start

    def nearest_with(self, folder: str, marker: str) -> str | None:
        """The nearest of ``folder`` (real, absolute) and the folders above it that holds
        ``marker``, or None."""
        below = []
        while (folder, marker) not in self._nearest:
            below.append(folder)
            if os.path.lexists(os.path.join(folder, marker)):
                self._nearest[folder, marker] = folder
                break
            parent = os.path.dirname(folder)
            if parent == folder:
                self._nearest[folder, marker] = None
                break
            folder = parent
        found = self._nearest[folder, marker]
        for passed in below:
            self._nearest[passed, marker] = found
        return found


def confinement_for(paths, search_paths=(), cwd: str | None = None) -> Confinement:
    """The confinement of a run on ``paths`` (as given on the command line) with the search
    paths given there: the project of the working folder and of each path (a file's folder,
    not a symbolic link's target), the search paths, and the Megatron-Bridge installations."""
    from mblint.extract.modules import installed_megatron_roots

    cwd = cwd or os.getcwd()
    projects = ProjectRoots()
    roots = [projects.of(cwd)]
    folders = {}  # each folder once: pre-commit passes hundreds of files from a few folders
    for given in paths:
        full = absolute(given, cwd)
        folders[full if os.path.isdir(full) and not os.path.islink(full) else os.path.dirname(full)] = None
    for folder in folders:
        roots.append(projects.of(folder))
        marked = any(projects.nearest_with(roots[-1], marker) == roots[-1] for marker in PROJECT_MARKERS)
        top = _package_top(roots[-1])
        if not marked and top != roots[-1]:  # a package tree without project marker: where it imports from
            roots.append(os.path.dirname(top))
    return Confinement([*roots, *(absolute(p, cwd) for p in search_paths), *installed_megatron_roots()])


def _package_top(folder: str) -> str:
    """The folder above the top-level package holding ``folder`` (``folder`` itself when it is
    no package): a tree such as an unzipped wheel's ``megatron/bridge/recipes`` imports its
    siblings from there (and a namespace package such as ``megatron`` one level up)."""
    while os.path.isfile(os.path.join(folder, "__init__.py")) and os.path.dirname(folder) != folder:
        folder = os.path.dirname(folder)
    return folder


# mblint's own JSON files (cache entries, the plugin catalog, a baseline) are a few kB to a
# few MB; one that is larger, deeper than this or not a regular file is not mblint's.
MAX_JSON_BYTES = 64_000_000


class NotRegularFile(ValueError):
    """A path that names a FIFO, socket, device or folder: never read (a FIFO would be waited on)."""

    def __init__(self) -> None:
        super().__init__("not a regular file (a FIFO, socket or device)")


class FileTooLarge(ValueError):
    """A file larger than the limit its reader sets; ``size`` is None when the system does
    not report it (the file grew, or is one of ``/proc``'s)."""

    def __init__(self, limit: int, size: int | None = None) -> None:
        super().__init__(f"larger than {limit:,} bytes")
        self.limit = limit
        self.size = size


def open_regular(path, follow_links: bool = True) -> int:
    """The one way mblint opens a file it reads (a tested promise: no other module opens one):
    a descriptor of ``path``, a regular file, opened without blocking (a FIFO named ``x.py``
    or a link to ``/proc/self/fd/0`` is never waited on; a device such as ``/dev/zero`` is
    refused). ``follow_links=False``: a symbolic link is not opened. Where the file may be
    read from (the project and its search paths) is the caller's question
    (``Confinement``). OSError when it cannot be opened; NotRegularFile."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow_links else getattr(os, "O_NOFOLLOW", 0))
    handle = os.open(path, flags)
    try:
        if not stat.S_ISREG(os.fstat(handle).st_mode):
            raise NotRegularFile()
    except BaseException:
        os.close(handle)
        raise
    return handle


def read_regular(path, limit: int, follow_links: bool = True) -> bytes:
    """The bytes of ``path`` (opened by ``open_regular``) of at most ``limit`` bytes, never
    reading past ``limit``. OSError when it cannot be opened or read; NotRegularFile;
    FileTooLarge."""
    handle = open_regular(path, follow_links)
    try:
        size = os.fstat(handle).st_size
        if size > limit:
            raise FileTooLarge(limit, size)
        # Asked for its size only: a read of ``limit + 1`` bytes allocates that much first.
        # A file that grew or reports no size (/proc) is read on, up to the same bound.
        want = size + 1
        data = _read_at_most(handle, want)
        if len(data) == want and want <= limit:
            data += _read_at_most(handle, limit + 1 - want)
    finally:
        os.close(handle)
    if len(data) > limit:
        raise FileTooLarge(limit)
    return data


def read_head(path, count: int, follow_links: bool = True) -> bytes:
    """The first ``count`` bytes of ``path`` (fewer when it is shorter), opened by
    ``open_regular``. OSError; NotRegularFile."""
    handle = open_regular(path, follow_links)
    try:
        return _read_at_most(handle, count)
    finally:
        os.close(handle)


def _read_at_most(handle: int, count: int) -> bytes:
    """Up to ``count`` bytes, fewer only at the end of the file."""
    chunks = []
    while count > 0:
        chunk = os.read(handle, min(count, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        count -= len(chunk)
    return b"".join(chunks)


def read_json(path, limit: int = MAX_JSON_BYTES, follow_links: bool = True):
    """The JSON document in ``path``, read by ``read_regular``. OSError when it cannot be
    read; ValueError when it is not such a document (too large, not a regular file, not UTF-8,
    not JSON, nested too deeply, or holding ``NaN``/``Infinity``)."""
    import json

    data = read_regular(path, limit, follow_links)
    try:
        return json.loads(data.decode("utf-8"), parse_constant=_no_constant)
    except RecursionError as error:
        raise ValueError("nested too deeply") from error


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number")
