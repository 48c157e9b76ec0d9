"""The built-in Megatron-Bridge rule pack. Registered through the ``mblint`` entry-point
group like any third-party pack; every module below this package that defines ``Rule``
subclasses contributes them."""

from __future__ import annotations

import importlib
import os
from importlib.machinery import all_suffixes
from typing import Iterator

from mblint.plugins import hookimpl
from mblint.rule import Rule


@hookimpl
def mblint_rules() -> list[type[Rule]]:
    found: list[type[Rule]] = []
    for name in module_names(__path__, __name__ + "."):
        module = importlib.import_module(name)
        for attribute in dir(module):  # sorted, as inspect.getmembers reads them
            value = getattr(module, attribute)
            if (isinstance(value, type) and issubclass(value, Rule) and value is not Rule
                    and value.__module__ == module.__name__ and value.id):
                found.append(value)
    return found


@hookimpl
def mblint_default_settings() -> dict:
    return {}


def module_names(paths: list[str], prefix: str, walked: set[str] | None = None) -> Iterator[str]:
    """The modules and packages below the folders ``paths``, named and ordered as
    ``pkgutil.walk_packages`` yields them (a package before its contents; each package imported
    to read its ``__path__``), with one directory scan per folder; pkgutil's own walk when a
    path is not a folder (an archive)."""
    if not all(os.path.isdir(path) for path in paths):
        import pkgutil

        yield from (info.name for info in pkgutil.walk_packages(paths, prefix))
        return
    walked = set() if walked is None else walked
    seen: set[str] = set()
    for path in paths:
        for name, is_package in _folder_modules(path):
            if name in seen:
                continue
            seen.add(name)
            yield prefix + name
            if is_package:
                try:
                    package = importlib.import_module(prefix + name)
                except ImportError:  # as pkgutil: reported when the module itself is imported
                    continue
                inner = [p for p in getattr(package, "__path__", None) or [] if p not in walked]
                walked.update(inner)
                yield from module_names(inner, prefix + name + ".", walked)


# inspect.getmodulename's test: the longest suffix first
_SUFFIXES = sorted(all_suffixes(), key=len, reverse=True)


def _module_name(file_name: str) -> str | None:
    for suffix in _SUFFIXES:
        if file_name.endswith(suffix):
            return file_name[:-len(suffix)]
    return None


def _folder_modules(folder: str) -> list[tuple[str, bool]]:
    """(name, is a package) of the modules in ``folder``, by file name, as pkgutil lists them."""
    try:
        entries = sorted(os.scandir(folder), key=lambda entry: entry.name)
    except OSError:
        return []
    found: list[tuple[str, bool]] = []
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
            found.append((name, is_package))
    return found


def _has_init(folder: str) -> bool:
    try:
        return any(_module_name(name) == "__init__" for name in os.listdir(folder))
    except OSError:
        return False
