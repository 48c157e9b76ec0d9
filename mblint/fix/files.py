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

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def encode(self, text: str) -> bytes:
        return ((BOM if self.bom else "") + text).encode("utf-8")


def read_state(path: Path) -> FileState | None:
    """None when the file cannot be read as UTF-8 (mblint never edits such a file)."""
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
    return FileState(path, data, text[1:] if bom else text, bom, stat.st_mode & 0o7777, stat.st_mtime_ns)


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


def write_atomic(state: FileState, text: str) -> bool:
    """Replace ``state.path`` with ``text`` (encoded like the original) through a temporary file
    in the same folder. Returns False when nothing would change. Raises ``ChangedOnDisk`` when
    the file is no longer what was read, and leaves it alone."""
    data = state.encode(text)
    if data == state.data:
        return False
    path = state.path
    _check_unchanged(state)
    handle, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".mblint-fix", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as temp:
            temp.write(data)
            temp.flush()
            os.fsync(temp.fileno())
        os.chmod(temp_name, state.mode)
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
