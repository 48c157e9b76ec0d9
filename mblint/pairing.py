"""Which recipe a YAML file overrides, and what to say about a YAML file that overrides none.

A YAML file is linted as the override file of one recipe. ``pairing`` answers for one file:
``Paired(recipe)`` when a recipe is named for it (``--recipe``, the file's
``# mblint: recipe=PATH::FUNCTION`` comment, ``pairing`` in settings), else ``Unpaired``,
which says whether the file looks like a Megatron-Bridge override (then it is a finding:
a configuration nobody checked) or like some other YAML file (then it is only counted as not
analysed). Every way of pairing a file goes through ``pairing``.

Which recipe a launch or an override file belongs to, without comments: a recipe *name* is
found the way Megatron-Bridge's runner finds it (``megatron.bridge.recipes``' exports, then
its ``<family>.h100`` packages, then ``megatron.bridge.perf_recipes.<family>``), read
statically through the interpreter's import machinery; a file named on a launch line is
looked for where the launch would find it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mblint.extract.modules import SourceError, read_source
from mblint.extract.values import FuncRef

HOW_TO_PAIR = ("pair it with its recipe: a `# mblint: recipe=PATH::FUNCTION` comment in the file, "
               "`pairing` in the settings (a recipe name will do), --recipe PATH::FUNCTION, or lint the launch "
               "script or training script that loads it")


@dataclass(frozen=True)
class Paired:
    recipe: str  # PATH_OR_MODULE::FUNCTION
    source: str  # how the pairing was found: option, comment, settings


@dataclass(frozen=True)
class Unpaired:
    override_keys: tuple[str, ...]  # its top-level keys that are ConfigContainer sections
    line: int = 1  # of the first of them

    @property
    def looks_like_override(self) -> bool:
        return bool(self.override_keys)

    def message(self) -> str:
        if self.looks_like_override:
            keys = ", ".join(self.override_keys[:4]) + (", ..." if len(self.override_keys) > 4 else "")
            return (f"not analysed: this looks like a Megatron-Bridge override file (top-level {keys} of "
                    f"ConfigContainer) but is paired with no recipe; {HOW_TO_PAIR}")
        return "not analysed: no Megatron-Bridge override file (no top-level key is a section of ConfigContainer)"


def pairing(path: Path, document: Any, option_recipe: str | None, settings) -> Paired | Unpaired:
    """How the YAML file ``path`` (parsed: ``document``) is paired; ``settings`` may be None."""
    from mblint.overrides import recipe_pairing

    if option_recipe:
        return Paired(option_recipe, "option")
    from_comment = recipe_pairing(path)
    if from_comment:
        return Paired(from_comment, "comment")
    from_settings = settings.pairing_for(path) if settings is not None else None
    if from_settings:
        return Paired(from_settings, "settings")
    keys = override_sections(document)
    return Unpaired(keys, _key_line(document, keys[0]) if keys else 1)


def override_sections(document: Any) -> tuple[str, ...]:
    """The top-level keys of ``document`` that are sections of ConfigContainer, when most of
    its top-level keys are (a Megatron-Bridge override file); else ()."""
    if not isinstance(document, dict) or not document:
        return ()
    keys = [str(key) for key in document]
    known = [key for key in keys if key in _config_container_fields()]
    if not known or 2 * len(known) < len(keys):
        return ()
    if not any(isinstance(document[key], dict) for key in document if str(key) in known):
        return ()  # a section of ConfigContainer is a mapping in an override file
    return tuple(known)


def _key_line(document: Any, key: str) -> int:
    """1-based line of a top-level key of a ruamel.yaml document (1 when it is not known)."""
    try:
        return document.lc.key(key)[0] + 1
    except (AttributeError, KeyError, TypeError):
        return 1


_FIELDS: frozenset[str] | None = None


def _config_container_fields() -> frozenset[str]:
    global _FIELDS
    if _FIELDS is None:
        from mblint.schema import available_lines, load_schema

        _FIELDS = frozenset(name for line in available_lines() for name in load_schema(line).root.fields)
    return _FIELDS


# ----- recipes named by launch scripts --------------------------------------------------

RECIPES = "megatron.bridge.recipes"
PERF_RECIPES = "megatron.bridge.perf_recipes"


class RecipeLookup:
    """``find(name)``: (file, function, kind) of an exported recipe function, kind "library"
    or "benchmark"; None when it is not exported. ``readable``: whether mblint could read the
    recipes package at all (else a name that is not found proves nothing)."""

    def __init__(self, interp: Any) -> None:
        self.interp = interp
        self._package_searched: set[Path] = set()
        self.package = interp.finder.find(RECIPES, self._package_searched)
        self.readable = self.package is not None
        self._found: dict[str, tuple[tuple | None, frozenset[Path]]] = {}

    def find(self, name: str, searched: set | None = None) -> tuple[Path, str, str] | None:
        """``searched`` gets what the answer depends on: the modules whose exports were read
        and what they import, the places a module was looked for in vain, the folders listed."""
        if name not in self._found:
            looked = set(self._package_searched)
            found = self._search(name, looked)
            self._found[name] = (found, frozenset(looked))
        found, looked = self._found[name]
        if searched is not None:
            searched.update(looked)
        return found

    def _search(self, name: str, looked: set[Path]) -> tuple[Path, str, str] | None:
        if self.package is None:
            return None
        for module in [RECIPES] + self._subpackages(RECIPES, "h100", looked):
            found = self._exported(module, name, looked)
            if found is not None:
                return (*found, "library")
        for module in self._subpackages(PERF_RECIPES, None, looked):
            found = self._exported(module, name, looked)
            if found is not None:
                return (*found, "benchmark")
        return None

    def _subpackages(self, package: str, leaf: str | None, looked: set[Path]) -> list[str]:
        init = self.interp.finder.find(package, looked)
        if init is None or init.name != "__init__.py":
            return []
        looked.add(init.parent)
        names = []
        try:
            entries = sorted(entry.name for entry in init.parent.iterdir()
                             if entry.is_dir() and not entry.name.startswith("_") and entry.name != "utils")
        except OSError:
            return []
        for entry in entries[:500]:
            names.append(f"{package}.{entry}.{leaf}" if leaf else f"{package}.{entry}")
        return names

    def _exported(self, module: str, name: str, looked: set[Path]) -> tuple[Path, str] | None:
        path = self.interp.finder.find(module, looked)
        if path is None:
            return None
        looked.add(path)
        try:
            value = self.interp.scope_for(path).lookup(name)
        except (SourceError, RecursionError):
            return None
        finally:
            looked.update(self.interp.dependencies(self.interp.finder.real_paths.of(path)))
        if isinstance(value, FuncRef):
            return value.module.path, value.node.name
        return None


def recipe_kwargs(node: ast.FunctionDef, peft_scheme: str | None) -> dict | None:
    """The keyword arguments scripts/training/recipe_runner.py passes a recipe function
    (``_recipe_kwargs_for_signature``): ``peft_scheme`` or ``peft`` for --mode lora/dora.
    None when the runner would refuse the recipe."""
    if peft_scheme is None:
        return {}
    names = {arg.arg for arg in node.args.args + node.args.kwonlyargs}
    if "peft_scheme" in names:
        return {"peft_scheme": peft_scheme}
    if "peft" in names or node.args.kwarg is not None:
        return {"peft": peft_scheme}
    if peft_scheme.lower() != "lora":
        return None
    return {}


def find_named_file(written: str, script: Path, root: Path | None, allows=lambda path: True,
                    searched: set | None = None) -> Path | None:
    """A file a launch line names: as written when absolute, else relative to the script's
    folder or one of its parent folders up to ``root`` (the launch's working folder is not
    known; scripts are run from their own folder or from the repository's top). ``searched``
    gets every place looked at, found or not (the answer depends on them all)."""
    searched = set() if searched is None else searched
    candidate = Path(written)
    if candidate.is_absolute():
        searched.add(candidate)
        return candidate if candidate.is_file() and allows(candidate) else None
    folder = script.parent.resolve()
    top = root.resolve() if root is not None else None
    for _ in range(12):
        found = folder / candidate
        searched.add(found)
        if found.is_file() and allows(found):
            return found
        if top is not None and folder == top or folder.parent == folder:
            break
        folder = folder.parent
    return None


MAX_ENTRY_CANDIDATES = 300  # Python files looked at per override file
ENTRY_LEVELS = 3  # the override file's folder and two above it


def entry_scripts_naming(yaml_path: Path, texts: dict, allows=lambda path: True,
                         searched: set | None = None) -> list[Path]:
    """Python files in the override file's folder or up to two folders above it whose text
    names the file (``"llama32_1b_finetune.yaml"``): the training scripts that may load it.
    ``texts``: file texts already read in this run, by path; ``allows``: whether a file may
    be read (the run's confinement); ``searched`` gets the folders listed and the files read
    (a script added or edited there may pair the file)."""
    searched = set() if searched is None else searched
    name = yaml_path.name
    found: list[Path] = []
    folder = yaml_path.resolve().parent
    looked = 0
    for _ in range(ENTRY_LEVELS):
        searched.add(folder)
        try:
            candidates = sorted(p for p in folder.iterdir() if p.suffix == ".py" and p.is_file() and allows(p))
        except OSError:
            candidates = []
        for candidate in candidates:
            looked += 1
            if looked > MAX_ENTRY_CANDIDATES:
                return found
            searched.add(candidate)
            if candidate not in texts:
                try:
                    texts[candidate] = read_source(candidate)
                except SourceError:
                    texts[candidate] = ""
            if name in texts[candidate]:
                found.append(candidate)
        if folder.parent == folder:
            break
        folder = folder.parent
    return found
