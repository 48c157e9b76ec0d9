"""Finding and parsing Python modules by name, without importing them."""

from __future__ import annotations

import ast
import os
import re
import stat
import sys
from functools import lru_cache
from pathlib import Path

from mblint.paths import FileTooLarge, NotRegularFile, RealFolders, absolute, read_regular


# Larger files are not read: the biggest Megatron-Bridge module is about 170 kB, and parsing
# costs about 100 bytes of memory per byte of source.
MAX_SOURCE_BYTES = 4_000_000


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """``text``'s lines as Python's tokenizer (and YAML) number them: ended by ``\n``, ``\r\n``
    or a lone ``\r`` only. ``str.splitlines`` also breaks at a form feed, ``\x1c``-``\x1e``,
    ``\x85``, U+2028 and U+2029, so a comment holding one would shift every later line."""
    lines = _LINE_BREAK.split(text)
    if lines and not lines[-1]:
        lines.pop()
    return lines


OUTSIDE_PROJECT = "not read: outside the project and its search paths"



# A noqa comment naming an id shaped like mblint's (two to four letters, three digits): ruff's
# and flake8's codes such as F401 or E501 do not match, so most files are never tokenized.
NOQA_WITH_IDS = r"#\s*noqa\s*:[^\n]*\b[A-Za-z]{2,4}\d{3}\b"


def may_hold_directives(text: str) -> bool:
    """Whether ``text`` may hold a ``# mblint:`` comment or a noqa naming an mblint-like id."""
    return "mblint" in text or ("noqa" in text and re.search(NOQA_WITH_IDS, text) is not None)


class SourceError(Exception):
    """A file that cannot be read or parsed; carries the position when there is one."""

    def __init__(self, path: Path, message: str, line: int = 1, column: int = 1) -> None:
        super().__init__(message)
        self.path = path
        self.message = message
        self.line = line
        self.column = column


class SourceLimit(SourceError):
    """A file mblint does not read whole because it hits one of its limits (size, YAML nodes):
    reported as SY002 (a limit of mblint), not SY001 (a broken file)."""


class ModuleSource:
    """A parsed source file. Its text is not kept (a run keeps hundreds of parsed files to the
    end): only what is asked of it after parsing, the non-ASCII lines for ``char_column`` and
    the text of a file that mentions mblint (directives, world-size comments)."""

    __slots__ = ("path", "display_path", "tree", "mblint_text", "wide_lines")

    def __init__(self, path: Path, display_path: str, text: str, tree: ast.Module) -> None:
        self.path = path
        self.display_path = display_path
        self.tree = tree
        # What a search for "mblint" comments (and noqa comments naming rule ids, reported as
        # a wrong suppression) finds in the text: nothing when it is "".
        self.mblint_text = text if may_hold_directives(text) else ""
        # The (1-based) lines where ``char_column`` is not ``byte_offset + 1``, numbered as
        # Python numbers them (``source_lines``).
        self.wide_lines: dict[int, str] = {} if text.isascii() else {
            number: line for number, line in enumerate(source_lines(text), 1) if not line.isascii()}

    @property
    def is_ascii(self) -> bool:
        return not self.wide_lines

    def char_column(self, line: int, byte_offset: int) -> int:
        """ast gives UTF-8 byte offsets; findings want 1-based character columns."""
        text = self.wide_lines.get(line)
        if text is None:  # bytes are characters (most lines, every line of most recipe files)
            return byte_offset + 1
        return len(text.encode("utf-8")[:byte_offset].decode("utf-8", "replace")) + 1


# Texts that stand in for files on disk while ``mblint.fix`` checks its edits before writing
# them (resolved path -> text without BOM). Empty outside a fix run.
SOURCE_OVERLAY: dict[Path, str] = {}


def read_source(path: Path, limit: int = MAX_SOURCE_BYTES, kind: str = "Python source") -> str:
    """The text of a source file; ``kind`` names what it should be (a binary file is not)."""
    if SOURCE_OVERLAY:
        text = SOURCE_OVERLAY.get(path.resolve())
        if text is not None:  # an editor's buffer or stdin: bounded as the file would be
            size = len(text.encode("utf-8", "surrogatepass"))
            if size > limit:
                raise SourceLimit(path, f"file size limit ({limit:,} bytes) exceeded: the text has {size:,} bytes "
                                        "and is not read")
            return text
    data = read_regular_file(path, limit)
    if b"\x00" in data:
        raise SourceError(path, f"file is binary (contains NUL bytes), not {kind}")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise SourceError(path, f"file is not valid UTF-8 (byte {error.start})", line) from error


def read_regular_file(path: Path, limit: int = MAX_SOURCE_BYTES) -> bytes:
    """The bytes of a regular file (``mblint.paths.read_regular``), its problems as
    SourceError (SourceLimit for the size limit)."""
    try:
        return read_regular(path, limit)
    except FileTooLarge as error:
        has = f"the file has {error.size:,} bytes and is not read" if error.size is not None else "the file is not read"
        raise SourceLimit(path, f"file size limit ({limit:,} bytes) exceeded: {has}") from error
    except NotRegularFile as error:
        raise SourceError(path, f"cannot read file: {error}") from error
    except OSError as error:
        raise SourceError(path, f"cannot read file: {error.strerror or error}") from error


class ParseMemo:
    """Parsed sources kept across runs by a process that checks the same files again and again
    (``mblint server``): a file parsed before in the same text is not parsed again. One text is
    kept per file (its path and display path), the last one parsed: an edited document's older
    texts are not worth their syntax trees (tens of times their text, and objects the cyclic
    garbage collector scans). The most recently used files are kept, at most ``size`` of them
    and ``chars`` characters of source together. A ``ModuleSource`` is never changed once made."""

    def __init__(self, size: int = 1024, chars: int = 4_000_000) -> None:
        from collections import OrderedDict

        self.size = size
        self.chars = chars
        self.held = 0  # characters of the texts kept
        self.entries: OrderedDict = OrderedDict()  # (path, display path) -> (text, ModuleSource)

    def get(self, file: tuple, text: str) -> ModuleSource | None:
        found = self.entries.get(file)
        if found is None or found[0] != text:
            return None
        self.entries.move_to_end(file)
        return found[1]

    def put(self, file: tuple, text: str, source: ModuleSource) -> None:
        replaced = self.entries.pop(file, None)
        if replaced is not None:
            self.held -= len(replaced[0])
        self.entries[file] = (text, source)
        self.held += len(text)
        while self.entries and (len(self.entries) > self.size or self.held > self.chars):
            _, (old, _) = self.entries.popitem(last=False)
            self.held -= len(old)


PARSE_MEMO: ParseMemo | None = None  # None: every run parses what it reads (the command line)


def parse_source(path: Path, text: str, display_path: str | None = None) -> ModuleSource:
    memo = PARSE_MEMO
    if memo is None:
        return _parse_source(path, text, display_path)
    file = (path, display_path)
    found = memo.get(file, text)
    if found is None:
        found = _parse_source(path, text, display_path)
        memo.put(file, text, found)
    return found


def _parse_source(path: Path, text: str, display_path: str | None = None) -> ModuleSource:
    try:
        tree = ast.parse(text, filename=str(path))
    except SyntaxError as error:
        raise SourceError(path, f"syntax error: {error.msg}", error.lineno or 1, error.offset or 1) from error
    except (ValueError, RecursionError, MemoryError) as error:
        # Python's parser gives no position here; the longest line holds the deep expression.
        line = _longest_line(text)
        raise SourceError(path, f"cannot parse: expression nested too deeply for Python's parser "
                                f"({type(error).__name__})", line) from error
    return ModuleSource(path, display_path or str(path), text, tree)


def _longest_line(text: str) -> int:
    lengths = [len(line) for line in source_lines(text)] or [0]
    return lengths.index(max(lengths)) + 1


@lru_cache(maxsize=1)
def installed_megatron_roots() -> tuple[Path, ...]:
    """sys.path entries that hold a Megatron-Bridge source tree (found, never imported)."""
    roots = []
    for entry in sys.path:
        if entry and (Path(entry) / "megatron" / "bridge" / "__init__.py").is_file():
            roots.append(Path(entry))
    return tuple(roots)


class RealPaths:
    """``Path.resolve()`` of files, kept for a run: a file that is not a symbolic link is its
    folder's real path and its name, and each folder's real path is built on its parent's
    (one lstat per file and per folder instead of one per component of every path)."""

    def __init__(self) -> None:
        self._files: dict[str, Path] = {}  # absolute path -> real path
        self.folder = RealFolders().of  # real path of an absolute folder
        self.cwd: str | None = None  # the working folder during a run (None: ask for it)

    def of(self, path: Path) -> Path:
        if ".." in os.fspath(path):  # resolved whole: a ".." after a symbolic link leaves the link's target
            return path.resolve()
        full = absolute(path, self.cwd)
        found = self._files.get(full)
        if found is None:
            found = self._files[full] = self._resolve(path, full)
        return found

    def _resolve(self, path: Path, absolute: str) -> Path:
        try:
            linked = stat.S_ISLNK(os.lstat(absolute).st_mode)
        except OSError:
            linked = True  # missing: Path.resolve says what it resolves to (or raises)
        if linked:
            return path.resolve()
        folder, name = os.path.split(absolute)
        return Path(os.path.join(self.folder(folder), name))


class ModuleFinder:
    """Maps module names to files under an ordered list of roots, and parses each file once."""

    def __init__(self, roots: list[Path], display_root: Path | None = None, real_paths: RealPaths | None = None,
                 texts: dict[Path, str] | None = None, confinement=None) -> None:
        self.real_paths = real_paths or RealPaths()
        self.confinement = confinement  # mblint.paths.Confinement; None: read anywhere (library use)
        self.roots = _unique(roots, self.real_paths)
        self.display_root = display_root or Path.cwd()
        self._parsed: dict[Path, ModuleSource | SourceError] = {}
        # A name's file, and the paths that made the other candidates fail (see module_file)
        self._found: dict[str, tuple[Path | None, tuple[Path, ...]]] = {}
        self._beside: dict[tuple, tuple[Path | None, tuple[Path, ...]]] = {}  # (folder, module name) -> find_beside()
        self._texts = texts if texts is not None else {}  # texts read before by the Project, parsed here
        self.folders = FolderEntries()

    # Each look-up by name adds to ``searched``, when given, the paths that made the candidates
    # before the answer fail (absent files, a file where a folder is needed): what the answer
    # depends on besides the file found (dependencies of a cached result).

    def find_beside(self, from_file: Path, name: str, searched: set | None = None) -> Path | None:
        """A top-level import resolved next to the importing file, as when it runs as a script."""
        key = (from_file.parent, name)
        found = self._beside.get(key)
        if found is None:
            tried: list[Path] = []
            found = self._beside[key] = (module_file(from_file.parent, name.split("."), self.folders, tried),
                                         tuple(tried))
        if searched is not None:
            searched.update(found[1])
        return found[0]

    def find(self, name: str, searched: set | None = None) -> Path | None:
        found = self._found.get(name)
        if found is None:
            parts = name.split(".")
            tried: list[Path] = []
            path = None
            for root in self.roots:
                path = module_file(root, parts, self.folders, tried)
                if path is not None:
                    break
            found = self._found[name] = (path, tuple(tried))
        if searched is not None:
            searched.update(found[1])
        return found[0]

    def find_relative(self, from_file: Path, level: int, name: str | None, searched: set | None = None) -> Path | None:
        searched = set() if searched is None else searched
        base = from_file.parent
        for _ in range(level - 1):
            base = base.parent
        if not name:
            init = base / "__init__.py"
            if init.is_file():
                return init
            searched.add(init)
            return None
        tried: list[Path] = []
        found = module_file(base, name.split("."), self.folders, tried)
        searched.update(tried)
        return found

    def is_package_dir(self, from_file: Path, level: int, name: str | None) -> Path | None:
        base = from_file.parent
        for _ in range(level - 1):
            base = base.parent
        target = base.joinpath(*name.split(".")) if name else base
        return target if target.is_dir() else None

    def load(self, path: Path) -> ModuleSource:
        cached = self._parsed.get(path)
        if cached is None:
            resolved = self.real_paths.of(path)
            cached = self._parsed.get(resolved)
            if cached is None:
                cached = self._parse(path)
                self._parsed[resolved] = cached
            else:  # parsed before by another name: a text read for it by this name is not needed
                self._texts.pop(path, None)
            self._parsed[path] = cached
        if isinstance(cached, SourceError):
            raise cached
        return cached

    def allows(self, path: Path) -> bool:
        """Whether ``path`` may be read: its real path is inside the run's confinement."""
        return self.confinement is None or self.confinement.allows(path, self.real_paths.of(path))

    def _parse(self, path: Path) -> "ModuleSource | SourceError":
        if not self.allows(path):
            return SourceError(path, OUTSIDE_PROJECT)
        try:
            text = self._texts.pop(path, None) if not SOURCE_OVERLAY else None
            return parse_source(path, read_source(path) if text is None else text, self.display(path))
        except SourceError as error:
            return error

    def display(self, path: Path) -> str:
        return display_path(path, self.display_root, self.real_paths.cwd)


def display_path(path: Path, root: Path, cwd: str | None = None) -> str:
    """How findings name a file: relative to ``root`` when below it, else as given. ``cwd``:
    the working folder, when the caller has it."""
    full = absolute(path, cwd)
    base = absolute(root, cwd).rstrip(os.sep) + os.sep
    return full[len(base):] if full.startswith(base) else str(path)


class FolderEntries:
    """The entries of each folder, listed once: most module look-ups miss (a name is tried
    under every import root and beside the importing file), and one read of a folder answers
    every try in it, where each try cost two ``stat`` calls. Names match exactly, as Python's
    own importer matches them."""

    UNLISTED = object()  # a folder that exists but cannot be listed: ask the file system

    def __init__(self) -> None:
        self._listed: dict[str, dict[str, os.DirEntry] | object] = {}

    def entry(self, folder: str, name: str) -> os.DirEntry | None | object:
        """The entry ``name`` of ``folder``, None when there is none, ``UNLISTED``."""
        listed = self._listed.get(folder)
        if listed is None:
            listed = self._listed[folder] = self._list(folder)
        if listed is self.UNLISTED:
            return listed
        return listed.get(name)

    def _list(self, folder: str) -> dict[str, os.DirEntry] | object:
        try:
            with os.scandir(folder) as entries:
                return {entry.name: entry for entry in entries}
        except (FileNotFoundError, NotADirectoryError):
            return {}
        except (OSError, ValueError):
            return self.UNLISTED


def module_file(root: Path, parts: list[str], folders: FolderEntries | None = None,
                searched: list | None = None) -> Path | None:
    """``root/a/b/__init__.py`` or ``root/a/b.py`` for ``parts`` ``["a", "b"]``: a package
    before a module of the same name, as Python's own FileFinder looks. ``searched`` gets each
    path that made a candidate fail (absent, or no folder where one is needed): the answer
    holds while they are as they are."""
    searched = [] if searched is None else searched
    if folders is not None and all(part.isidentifier() for part in parts):
        tried: list[Path] = []
        found = _listed_module_file(root, parts, folders, tried)
        if found is not FolderEntries.UNLISTED:
            searched.extend(tried)
            return found
    target = root.joinpath(*parts)
    for candidate in (target / "__init__.py", target.with_name(target.name + ".py")):
        if candidate.is_file():
            return candidate
        searched.append(candidate)
    return None


def _listed_module_file(root: Path, parts: list[str], folders: FolderEntries, searched: list) -> Path | None | object:
    """``module_file`` answered from folder listings (``UNLISTED`` when one is missing)."""
    folder = os.fspath(root)
    for part in parts[:-1]:
        entry = folders.entry(folder, part)
        if entry is FolderEntries.UNLISTED:
            return entry
        folder = os.path.join(folder, part)
        if entry is None or not entry.is_dir():
            searched.append(Path(folder))
            return None
    for candidate in (_listed_package, _listed_module):
        found = candidate(root, parts, folder, folders, searched)
        if found is not None:
            return found
    return None


def _listed_module(root: Path, parts: list[str], folder: str, folders: FolderEntries,
                   searched: list) -> Path | None | object:
    """``root/a/b.py`` (``folder``: ``root/a``), from the listings."""
    module = folders.entry(folder, parts[-1] + ".py")
    if module is FolderEntries.UNLISTED:
        return module
    path = root.joinpath(*parts[:-1], parts[-1] + ".py")
    if module is not None and module.is_file():
        return path
    searched.append(path)
    return None


def _listed_package(root: Path, parts: list[str], folder: str, folders: FolderEntries,
                    searched: list) -> Path | None | object:
    """``root/a/b/__init__.py`` (``folder``: ``root/a``), from the listings."""
    package = folders.entry(folder, parts[-1])
    if package is FolderEntries.UNLISTED:
        return package
    if package is None or not package.is_dir():
        searched.append(root.joinpath(*parts))
        return None
    init = folders.entry(os.path.join(folder, parts[-1]), "__init__.py")
    if init is FolderEntries.UNLISTED:
        return init
    path = root.joinpath(*parts, "__init__.py")
    if init is not None and init.is_file():
        return path
    searched.append(path)
    return None


def _unique(paths: list[Path], real_paths: RealPaths) -> list[Path]:
    seen: set[Path] = set()
    result = []
    for path in paths:
        key = real_paths.of(path)
        if key not in seen:
            seen.add(key)
            result.append(path)
    return result


def module_name_guess(path: Path) -> str | None:
    """The dotted module name of a file below a ``megatron`` folder (``megatron.bridge.x``)."""
    parts = list(path.with_suffix("").parts)
    if "megatron" not in parts:
        return None
    index = len(parts) - 1 - parts[::-1].index("megatron")
    names = parts[index:]
    if names[-1] == "__init__":
        names = names[:-1]
    return ".".join(names)
