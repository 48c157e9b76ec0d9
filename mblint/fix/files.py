"""Reading files for fixing, an in-memory overlay for re-linting edits, and atomic writes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

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
        data = path.read_bytes()
        stat = path.stat()
    except OSError:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    bom = text.startswith(BOM)
    cr_only = "\r" in text and "\n" not in text
    if cr_only:
        text = text.replace("\r", "\n")
    return FileState(path, data, text[1:] if bom else text, bom, stat.st_mode & 0o7777, stat.st_mtime_ns, cr_only)


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
    the file is no longer what was read, and leaves it alone."""
    data = state.encode(text)
    if data == state.data:
        return False
    path = _target(state.path, allows)
    _check_unchanged(state)
    info = os.stat(path)
    if info.st_nlink > 1:
        raise NotRewritten(f"{state.path}: has {info.st_nlink} hard links, which replacing it would break; "
                           "not fixed")
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
                    raise NotRewritten(f"{state.path}: its owner and group cannot be kept ({error.strerror}); "
                                       "not fixed") from error
        os.chmod(temp_name, info.st_mode & 0o7777)
        _check_unchanged(state)
        os.replace(temp_name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp_name)
        raise
    return True


def _check_unchanged(state: FileState) -> None:
    try:
        current = state.path.read_bytes()
    except OSError as error:
        raise ChangedOnDisk(f"{state.path}: cannot re-read before writing: {error}") from error
    if hashlib.sha256(current).hexdigest() != state.digest:
        raise ChangedOnDisk(f"{state.path}: changed on disk since mblint read it; not overwritten")
