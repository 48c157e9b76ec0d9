"""Reading files for fixing, an in-memory overlay for re-linting edits, and atomic writes."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import functools
import hashlib
import os
import signal
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from mblint.extract.modules import MAX_SOURCE_BYTES
from mblint.paths import open_regular, read_regular

BOM = "\ufeff"


@dataclass(frozen=True)
class FileState:
    """A file as read before fixing: its bytes (for the on-disk change check), its text
    without BOM and whether it had one, and its mode."""

    path: Path
    data: bytes
    text: str
    bom: bool
    mode: int
    mtime_ns: int
    cr_only: bool = False  # lines ended by a lone "\r": edited as "\n", written back as "\r"

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def encode(self, text: str) -> bytes:
        if self.cr_only:
            text = text.replace("\n", "\r")
        return ((BOM if self.bom else "") + text).encode("utf-8")


def read_state(path: Path) -> FileState | None:
    """None when the file cannot be read as UTF-8 (mblint never edits such a file). A file
    with lone-CR line endings is edited as if they were "\n" (libcst and the edit positions
    agree on those) and written back with its own."""
    try:
        data = read_regular(path, MAX_SOURCE_BYTES)
        stat = path.stat()
    except (OSError, ValueError):
        return None
    return state_from_bytes(path, data, stat.st_mode & 0o7777, stat.st_mtime_ns)


def state_from_bytes(path: Path, data: bytes, mode: int = 0o644, mtime_ns: int = 0) -> FileState | None:
    """``data`` (a file's bytes, or the source an editor sends on stdin for ``path``) as the
    fix loop holds a file; None when it is not UTF-8."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    bom = text.startswith(BOM)
    cr_only = "\r" in text and "\n" not in text
    if cr_only:
        text = text.replace("\r", "\n")
    return FileState(path, data, text[1:] if bom else text, bom, mode, mtime_ns, cr_only)


class NotRewritten(Exception):
    """A file mblint does not replace: a link, or one it could not give back its owner."""


@contextlib.contextmanager
def overlay(texts: dict[Path, str]) -> Iterator[None]:
    """Make the linter read ``texts`` instead of the files on disk."""
    from mblint.extract import modules

    saved = dict(modules.SOURCE_OVERLAY)
    modules.SOURCE_OVERLAY.clear()
    modules.SOURCE_OVERLAY.update({path.resolve(): text for path, text in texts.items()})
    try:
        yield
    finally:
        modules.SOURCE_OVERLAY.clear()
        modules.SOURCE_OVERLAY.update(saved)


class ChangedOnDisk(Exception):
    pass


def _target(path: Path, allows) -> Path:
    """The file to replace for ``path``: itself, or the file a symbolic link points to when
    ``allows`` (the project's confinement) holds it. A link itself is never replaced."""
    if not path.is_symlink():
        return path
    target = path.resolve()
    if allows is None or not allows(target):
        raise NotRewritten(f"{path}: a symbolic link to {target}, outside the project; not fixed")
    return target


def write_atomic(state: FileState, text: str, allows=None) -> bool:
    """Replace ``state.path`` with ``text`` (encoded like the original) through a temporary file
    in the same folder, keeping its mode, owner and group. A symbolic link is fixed through (its
    target replaced) when ``allows(target)``; a file with other hard links is not replaced
    (``NotRewritten``). Returns False when nothing would change. Raises ``ChangedOnDisk`` when
    the file is no longer what was read, and leaves it as the other writer left it.

    The original is held open, locked (``flock``) and, on Linux, under a read lease: a process
    that opens it for writing meanwhile waits until mblint lets go, and the lease says so. It
    is checked right before the new file takes its place and right after (same file, same
    bytes, lease intact); the two are swapped atomically (``renameat2(RENAME_EXCHANGE)``), so an
    edit saved in between is put back as the very file the editor wrote to."""
    data = state.encode(text)
    if data == state.data:
        return False
    path = _target(state.path, allows)
    with _held(state, path) as original, _read_lease(state, original) as lease_intact:
        info = os.fstat(original)
        if info.st_nlink > 1:
            raise NotRewritten(f"{state.path}: has {info.st_nlink} hard links, which replacing it would break; "
                               "not fixed")
        _check_unchanged(state, path, original)

        def untouched(displaced: os.stat_result | None = None) -> bool:
            same = displaced is None or (displaced.st_dev, displaced.st_ino) == (info.st_dev, info.st_ino)
            return same and lease_intact() and _read_whole(original) == state.data

        temp_name = _write_temporary(path, data, info, state.path)
        try:
            _check_unchanged(state, path, original)
            if not lease_intact():
                raise ChangedOnDisk(f"{state.path}: changed on disk since mblint read it; not overwritten")
            if _exchange(temp_name, path):
                if not untouched(os.lstat(temp_name)):  # saved meanwhile: that file goes back in place
                    _exchange(temp_name, path)
                    raise ChangedOnDisk(f"{state.path}: changed on disk while mblint wrote it; "
                                        "the change is kept, not overwritten")
                os.unlink(temp_name)
            else:
                os.replace(temp_name, path)
                if not untouched():  # saved meanwhile, into the replaced file: its bytes go back
                    _write_back(path, _read_whole(original), info, state.path)
                    raise ChangedOnDisk(f"{state.path}: changed on disk while mblint wrote it; "
                                        "the change is kept, not overwritten")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temp_name)
            raise
    return True


@contextlib.contextmanager
def _held(state: FileState, path: Path) -> Iterator[int]:
    """The file to replace, open and locked (``flock``: another mblint, or an editor that locks,
    waits for no one: a held lock refuses the fix)."""
    try:
        handle = open_regular(path)
    except (OSError, ValueError) as error:
        raise ChangedOnDisk(f"{state.path}: cannot re-read before writing: {error}") from error
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as error:
            raise ChangedOnDisk(f"{state.path}: locked by another process; not overwritten") from error
        yield handle
    finally:
        os.close(handle)


@contextlib.contextmanager
def _read_lease(state: FileState, handle: int) -> Iterator:
    """A Linux read lease on ``handle``'s file while the fix is written: yields ``intact()``,
    False once another process has opened the file for writing (its open waits until the
    lease is let go). Where there are no leases (another system, another thread, a file
    system or owner that refuses one), ``intact()`` is always True."""
    setlease = getattr(fcntl, "F_SETLEASE", None)
    if setlease is None or threading.current_thread() is not threading.main_thread():
        yield lambda: True
        return
    previous = signal.signal(signal.SIGIO, signal.SIG_IGN)  # a lease break is signalled; SIGIO would end mblint
    try:
        try:
            fcntl.fcntl(handle, setlease, fcntl.F_RDLCK)
        except OSError as error:
            if error.errno == errno.EAGAIN:  # open for writing right now
                raise ChangedOnDisk(f"{state.path}: open for writing by another process; not overwritten") from error
            yield lambda: True
            return
        try:
            yield lambda: fcntl.fcntl(handle, fcntl.F_GETLEASE) == fcntl.F_RDLCK
        finally:
            with contextlib.suppress(OSError):
                fcntl.fcntl(handle, setlease, fcntl.F_UNLCK)
    finally:
        signal.signal(signal.SIGIO, previous)


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@functools.lru_cache(maxsize=1)
def _renameat2():
    try:
        import ctypes

        function = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError, ImportError):
        return None
    return function


def _exchange(first: str | Path, second: str | Path) -> bool:
    """Swap two files atomically (Linux ``renameat2(RENAME_EXCHANGE)``); False where the
    system or file system cannot."""
    import ctypes

    function = _renameat2()
    if function is None:
        return False
    if function(_AT_FDCWD, os.fsencode(first), _AT_FDCWD, os.fsencode(second), _RENAME_EXCHANGE) == 0:
        return True
    error = ctypes.get_errno()
    if error in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(error, os.strerror(error), str(second))


def _write_temporary(path: Path, data: bytes, info: os.stat_result, shown: Path) -> str:
    """A temporary file beside ``path`` holding ``data``, flushed to disk, with the mode, owner
    and group of ``info``; its name."""
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".mblint-fix", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
            if (info.st_uid, info.st_gid) != (os.getuid(), os.getgid()):
                try:
                    os.fchown(temp.fileno(), info.st_uid, info.st_gid)
                except OSError as error:
                    raise NotRewritten(f"{shown}: its owner and group cannot be kept ({error.strerror}); "
                                       "not fixed") from error
        os.chmod(temp_name, info.st_mode & 0o7777)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    return temp_name


def _write_back(path: Path, data: bytes, info: os.stat_result, shown: Path) -> None:
    os.replace(_write_temporary(path, data, info, shown), path)


def _read_whole(handle: int) -> bytes:
    chunks, offset = [], 0
    while chunk := os.pread(handle, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


def _check_unchanged(state: FileState, path: Path, handle: int) -> None:
    """The file at ``path`` is still the one ``handle`` holds (no editor renamed another
    over it) and holds what was read."""
    try:
        named, held = os.stat(path), os.fstat(handle)
        current = _read_whole(handle)
    except OSError as error:
        raise ChangedOnDisk(f"{state.path}: cannot re-read before writing: {error}") from error
    if (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino) or current != state.data:
        raise ChangedOnDisk(f"{state.path}: changed on disk since mblint read it; not overwritten")
