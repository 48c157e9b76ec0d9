"""The built-in Megatron-Bridge rule pack. Registered through the ``mblint`` entry-point
group like any third-party pack; every module below this package that defines ``Rule``
subclasses contributes them."""

from __future__ import annotations

import importlib
import os
import sys
from collections import Counter
from importlib.machinery import SourceFileLoader, all_suffixes
from importlib.util import module_from_spec, spec_from_file_location
from typing import Iterator

from mblint.paths import read_bytes
from mblint.plugins import hookimpl
from mblint.rule import Rule


@hookimpl
def mblint_rules() -> list[type[Rule]]:
    found: list[type[Rule]] = []
    for name, source in _modules(__path__, __name__ + "."):
        module = _import(name, source)
        for attribute in dir(module):  # sorted, as inspect.getmembers reads them
            value = getattr(module, attribute)
            if (isinstance(value, type) and issubclass(value, Rule) and value is not Rule
                    and value.__module__ == module.__name__ and value.id):
                found.append(value)
    return found


@hookimpl
def mblint_default_settings() -> dict:
    return {}


def module_names(paths: list[str], prefix: str) -> Iterator[str]:
    """The modules and packages below the folders ``paths``, named and ordered as
    ``pkgutil.walk_packages`` yields them (a package before its contents; each package imported
    to read its ``__path__``), with one directory scan per folder; pkgutil's own walk when a
    path is not a folder (an archive)."""
    return (name for name, _ in _modules(paths, prefix))


def _modules(paths: list[str], prefix: str, walked: set[str] | None = None) -> Iterator[tuple[str, str | None]]:
    """(name, source) of each module of ``module_names``; ``source``: the module's only file,
    a ``.py`` file, else None."""
    if not all(os.path.isdir(path) for path in paths):
        import pkgutil

        yield from ((info.name, None) for info in pkgutil.walk_packages(paths, prefix))
        return
    walked = set() if walked is None else walked
    seen: set[str] = set()
    for path in paths:
        for name, is_package, source in _folder_modules(path):
            if name in seen:
                continue
            seen.add(name)
            yield prefix + name, source
            if is_package:
                try:
                    package = importlib.import_module(prefix + name)
                except ImportError:  # as pkgutil: reported when the module itself is imported
                    continue
                inner = [p for p in getattr(package, "__path__", None) or [] if p not in walked]
                walked.update(inner)
                yield from _modules(inner, prefix + name + ".", walked)


def _import(name: str, source: str | None):
    """``importlib.import_module(name)``. A module whose only file is ``source``, as the walk
    found it, is loaded from that file: the import system would find the same file, after
    asking each finder and the file system again."""
    if source is None or name in sys.modules:
        return importlib.import_module(name)
    spec = spec_from_file_location(name, source, loader=_SourceLoader(name, source))
    module = module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise
    module = sys.modules[name]
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


class _SourceLoader(SourceFileLoader):
    """Reads a module's cached bytecode (or its source) with five system calls; the buffered
    file of ``io.open_code`` takes eight."""

    def get_data(self, path: str) -> bytes:
        return read_bytes(path)


# inspect.getmodulename's test: the longest suffix first
_SUFFIXES = sorted(all_suffixes(), key=len, reverse=True)


def _module_name(file_name: str) -> str | None:
    for suffix in _SUFFIXES:
        if file_name.endswith(suffix):
            return file_name[:-len(suffix)]
    return None


def _folder_modules(folder: str) -> list[tuple[str, bool, str | None]]:
    """(name, is a package, source) of the modules in ``folder``, by file name, as pkgutil
    lists them; ``source``: the path of a module whose only file is ``name.py``."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    files_of = Counter(_module_name(entry.name) or entry.name for entry in entries)
    found: list[tuple[str, bool, str | None]] = []
    named: set[str] = set()
    for entry in entries:
        name = _module_name(entry.name)
        if name == "__init__" or name in named:
            continue
        is_package = False
        if not name and "." not in entry.name and entry.is_dir():
            if not _has_init(entry.path):
                continue
            name, is_package = entry.name, True
        if name and "." not in name:
            named.add(name)
            sole_source = not is_package and files_of[name] == 1 and entry.name == name + ".py"
            found.append((name, is_package, entry.path if sole_source else None))
    return found


def _has_init(folder: str) -> bool:
    try:
        return any(_module_name(name) == "__init__" for name in os.listdir(folder))
    except OSError:
        return False
