"""YAML override files and Hydra-style dotlist overrides, applied on a resolved recipe.

YAML files are read with ruamel.yaml's round-trip loader (positions and comments kept, no
Python tags constructed). Dotlist overrides follow the Hydra grammar that Megatron-Bridge's
recipe runner uses: ``a.b=v``, ``+a.b=v``, ``++a.b=v``, ``~a.b``; values may be ``null``,
booleans, numbers, quoted strings, ``[lists]`` and ``{dicts}``.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mblint.extract.modules import SourceError, SourceLimit, read_source, source_lines
from mblint.extract.limits import MAX_INT_BITS
from mblint.extract.values import Obj
from mblint.model import UNKNOWN, Origin, Unknown

RECIPE_PAIRING = re.compile(r"#\s*mblint:\s*recipe\s*=\s*(\S+)")
# ruamel.yaml reads about 60 kB/s; override files are a few kB.
MAX_YAML_BYTES = 500_000
MAX_YAML_NODES = 200_000
MAX_YAML_FLOW_DEPTH = 100
_BRACKETS = re.compile(r"[\[\]{}]")


@dataclass(frozen=True)
class Override:
    """One override: set (or delete) the field at ``path``."""

    path: tuple[str, ...]
    value: Any
    origin: Origin
    action: str = "set"  # set | add | force | delete
    text: str = ""


# ----- YAML -------------------------------------------------------------------------------


def load_yaml(path: Path, display: str | None = None) -> Any:
    """The override file's document. Nothing is constructed before the node tree is checked:
    a tag outside YAML's core schema (``!!python/object``...) is a SY001 finding, and a tree
    that aliases expand past ``MAX_YAML_NODES`` (a "billion laughs") is a limit (SY002)."""
    return _read_yaml(path)[1]


def _read_yaml(path: Path) -> tuple[str, Any]:
    """(text, document) of an override file, read once (see ``load_yaml``)."""
    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    text = read_source(path, MAX_YAML_BYTES)
    _check_flow_depth(path, text)
    yaml = YAML(typ="rt")
    yaml.allow_duplicate_keys = False
    parser = None
    try:
        constructor, parser = yaml.get_constructor_parser(text)  # checks the characters
        with warnings.catch_warnings():  # ruamel warns about a reused anchor: valid YAML
            warnings.simplefilter("ignore")
            node = constructor.composer.get_single_node()
        if node is None:
            return text, None
        _check_nodes(path, node)
        try:
            return text, constructor.construct_document(node)
        except ValueError as error:  # an integer of more than 4,300 digits (Python's limit)
            raise SourceError(path, f"invalid YAML: {error}".split(";")[0], 1, 1) from error
    except YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        line, column = (mark.line + 1, mark.column + 1) if mark else _line_column(text, getattr(error, "position", 0))
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise SourceError(path, f"invalid YAML: {problem}", line, column) from error
    except RecursionError as error:
        raise SourceError(path, "invalid YAML: nested too deeply") from error
    finally:
        if parser is not None:
            parser.dispose()


def _check_flow_depth(path: Path, text: str) -> None:
    """SY002 for brackets (``[`` ``{``) nested deeper than ``MAX_YAML_FLOW_DEPTH``: ruamel's
    scanner walks every open level for every token (10,000 levels took 29 s; the 500 kB a file
    may hold, hours). Brackets in quotes and comments count too: no override file has 100."""
    depth = 0
    for bracket in _BRACKETS.finditer(text):
        if bracket.group() in "[{":
            depth += 1
            if depth > MAX_YAML_FLOW_DEPTH:
                line, column = _line_column(text, bracket.start())
                raise SourceLimit(path, f"YAML nesting limit ({MAX_YAML_FLOW_DEPTH} levels of [ ] and {{ }}) "
                                        "exceeded: the override file is not applied", line, column)
        elif depth:
            depth -= 1


def _line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of a character offset."""
    offset = max(0, min(offset or 0, len(text)))
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


def _check_nodes(path: Path, root: Any) -> None:
    """Walk the node tree as aliases expand it, without recursion."""
    stack = [root]
    visited = 0
    while stack:
        node = stack.pop()
        visited += 1
        if visited > MAX_YAML_NODES:
            raise SourceLimit(path, f"YAML node limit ({MAX_YAML_NODES:,} nodes with aliases expanded) "
                                    "exceeded: the override file is not applied")
        tag = node.tag.value if hasattr(node.tag, "value") else node.tag
        if tag and tag not in CORE_TAGS:
            mark = node.start_mark
            raise SourceError(path, f"YAML tag {_short_tag(tag)} is not allowed: Megatron-Bridge reads "
                                    "override files with a safe loader", mark.line + 1, mark.column + 1)
        value = node.value
        if isinstance(value, list):
            for item in value:
                stack.extend(item if isinstance(item, tuple) else (item,))


CORE_TAGS = frozenset(f"tag:yaml.org,2002:{name}" for name in
                      ("str", "int", "float", "bool", "null", "map", "seq", "merge", "timestamp", "binary",
                       "omap", "pairs", "set", "value"))


def _short_tag(tag: str) -> str:
    return "!!" + tag[len("tag:yaml.org,2002:"):] if tag.startswith("tag:yaml.org,2002:") else tag


def _content_end(line: str) -> int:
    """The length of ``line`` without a trailing comment (``#`` after a blank, outside quotes)
    and the blanks before it: where a finding's span on this YAML line stops."""
    quote = ""
    for index, char in enumerate(line):
        if quote:
            if char == quote:
                quote = ""
        elif char in "'\"" and line[:index].rstrip()[-1:] in ("", ":", "-", "[", "{", ","):
            quote = char  # a quoted scalar starts here (an apostrophe inside a plain one does not)
        elif char == "#" and (index == 0 or line[index - 1] in " \t"):
            return len(line[:index].rstrip())
    return len(line.rstrip())


def yaml_overrides(path: Path, display: str) -> list[Override]:
    text, document = _read_yaml(path)
    if document is None:
        return []
    from ruamel.yaml.comments import CommentedMap

    if not isinstance(document, CommentedMap):
        raise SourceError(path, "an override file must be a mapping of config fields", 1, 1)
    lines = source_lines(text)
    overrides: list[Override] = []
    _collect_yaml(document, (), display, lines, overrides, depth=0)
    return overrides


def _collect_yaml(node: Any, prefix: tuple, display: str, lines: list[str], out: list, depth: int) -> None:
    from ruamel.yaml.comments import CommentedMap

    if depth > 64:
        return
    for key in node:
        line, column = _key_position(node, key)
        end_column = _content_end(lines[line]) + 1 if line < len(lines) else column + 2
        origin = Origin(display, line + 1, column + 1, line + 1, end_column, "override", _next_seq())
        value = node[key]
        path = prefix + (str(key),)
        if isinstance(value, CommentedMap) and "_target_" not in value:
            out.append(Override(path, _MERGE, origin, "merge"))
            _collect_yaml(value, path, display, lines, out, depth + 1)
        else:
            out.append(Override(path, _plain_yaml(value, depth), origin))


def _key_position(node: Any, key: Any) -> tuple[int, int]:
    """0-based line and column of ``key`` in ``node``; a key merged in (``<<: *anchor``) or
    read from an ``!!omap`` has none of its own: the mapping's position stands for it."""
    try:
        position = node.lc.key(key)
    except (KeyError, AttributeError, TypeError):
        position = None
    if position is None or position[0] is None:
        return node.lc.line or 0, node.lc.col or 0
    return position


_override_clock = iter(range(1_000_000_000, 10**12))


def _next_seq() -> int:
    """Overrides come after every recipe line in program order."""
    return next(_override_clock)


# OmegaConf resolves ``${...}`` (another key, ``oc.env``, a resolver) when the job starts
INTERPOLATION = "${"
INTERPOLATED = "an interpolation (${...}) that OmegaConf resolves when the job starts"


class _Merge:
    def __repr__(self) -> str:
        return "<merge>"


_MERGE = _Merge()


def _plain_yaml(value: Any, depth: int = 0) -> Any:
    if depth > 64:
        return UNKNOWN
    if isinstance(value, str) and value == "???":
        return Unknown("mandatory value (???) not given")
    if isinstance(value, str) and INTERPOLATION in value:
        return Unknown(INTERPOLATED)
    if isinstance(value, dict):
        return {str(k): _plain_yaml(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain_yaml(v, depth + 1) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        if value.bit_length() > MAX_INT_BITS:  # as the interpreter: no rule computes with it
            return Unknown(f"integer of {value.bit_length():,} bits, beyond mblint's limit")
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return UNKNOWN


def recipe_pairing(path: Path) -> str | None:
    """``# mblint: recipe=<path or module>::<function>`` in an override file."""
    try:
        text = read_source(path)
    except SourceError:
        return None
    match = RECIPE_PAIRING.search(text)
    return match.group(1) if match else None


# ----- dotlist ----------------------------------------------------------------------------

_KEY = re.compile(r"^(~|\+\+|\+)?([A-Za-z_][\w]*(?:\.[\w\-]+)*)(?:=(.*))?$", re.S)


class DotlistError(ValueError):
    pass


def parse_dotlist(item: str, origin: Origin) -> Override:
    match = _KEY.match(item.strip())
    if not match:
        raise DotlistError(f"not an override (expected key=value, +key=value, ++key=value or ~key): {item!r}")
    prefix, key, raw = match.groups()
    path = tuple(key.split("."))
    if prefix == "~":
        return Override(path, None, origin, "delete", item)
    if raw is None:
        raise DotlistError(f"override {item!r} has no '=value'")
    action = {"+": "add", "++": "force"}.get(prefix or "", "set")
    return Override(path, parse_value(raw), origin, action, item)


def parse_value(text: str) -> Any:
    if INTERPOLATION in text:
        return Unknown(INTERPOLATED)
    parser = _ValueParser(text)
    value = parser.value(top=True)
    parser.skip_space()
    if parser.pos != len(text):
        raise DotlistError(f"unexpected text in value {text!r} at position {parser.pos + 1}")
    return value


class _ValueParser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def skip_space(self) -> None:
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def value(self, top: bool = False, depth: int = 0) -> Any:
        if depth > 50:
            raise DotlistError("value nested too deeply")
        self.skip_space()
        char = self.peek()
        if char == "[":
            return self.sequence(depth)
        if char == "{":
            return self.mapping(depth)
        if char and char in "'\"":  # at the end, peek() gives "", which is "in" any string
            return self.quoted()
        return self.bare(top)

    def sequence(self, depth: int) -> list:
        self.pos += 1
        items: list = []
        self.skip_space()
        if self.peek() == "]":
            self.pos += 1
            return items
        while True:
            items.append(self.value(depth=depth + 1))
            self.skip_space()
            char = self.peek()
            self.pos += 1
            if char == "]":
                return items
            if char != ",":
                raise DotlistError(f"expected ',' or ']' in {self.text!r}")

    def mapping(self, depth: int) -> dict:
        self.pos += 1
        items: dict = {}
        self.skip_space()
        if self.peek() == "}":
            self.pos += 1
            return items
        while True:
            self.skip_space()
            key = self.quoted() if self.peek() and self.peek() in "'\"" else self.word(":")
            self.skip_space()
            if self.peek() != ":":
                raise DotlistError(f"expected ':' after key {key!r} in {self.text!r}")
            self.pos += 1
            items[str(key)] = self.value(depth=depth + 1)
            self.skip_space()
            char = self.peek()
            self.pos += 1
            if char == "}":
                return items
            if char != ",":
                raise DotlistError(f"expected ',' or '}}' in {self.text!r}")

    def quoted(self) -> str:
        quote = self.text[self.pos]
        end = self.pos + 1
        chunks = []
        while end < len(self.text) and self.text[end] != quote:
            if self.text[end] == "\\" and end + 1 < len(self.text):
                end += 1
            chunks.append(self.text[end])
            end += 1
        if end >= len(self.text):
            raise DotlistError(f"unterminated quoted string in {self.text!r}")
        self.pos = end + 1
        return "".join(chunks)

    def word(self, stops: str) -> str:
        start = self.pos
        while self.pos < len(self.text) and self.text[self.pos] not in stops + ",]}[{":
            self.pos += 1
        return self.text[start:self.pos].strip()

    def bare(self, top: bool) -> Any:
        text = self.text[self.pos:] if top else self.word("")
        if top:
            self.pos = len(self.text)
            text = text.strip()
        return _scalar(text)


# Hydra's override grammar (OverrideLexer.g4): INT, FLOAT, BOOL and NULL tokens; anything else
# unquoted is a string, and a character outside its ASCII set is a lexer error.
_HYDRA_INT = re.compile(r"[+-]?(0|[1-9](_?[0-9])*)")
_HYDRA_FLOAT = re.compile(
    r"[+-]?(((([0-9](_?[0-9])*)?\.[0-9](_?[0-9])*|[0-9](_?[0-9])*\.)|[0-9](_?[0-9])*)"
    r"([eE][+-]?[0-9](_?[0-9])*)|([0-9](_?[0-9])*)?\.[0-9](_?[0-9])*|[0-9](_?[0-9])*\.|inf|nan)",
    re.IGNORECASE)


def _scalar(text: str) -> Any:
    lowered = text.lower()
    if lowered == "null":  # Hydra's grammar: NULL is [Nn][Uu][Ll][Ll]; "none" stays the string 'none'
        return None
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if _HYDRA_INT.fullmatch(text):
        return int(text)
    if _HYDRA_FLOAT.fullmatch(text):
        return float(text)
    if not text.isascii():
        character = next(char for char in text if not char.isascii())
        raise DotlistError(f"Hydra's override grammar rejects {character!r} (U+{ord(character):04X}) outside "
                           f"quotes in {text!r}")
    return text


# ----- applying ---------------------------------------------------------------------------


def apply_overrides(resolved: Any, overrides: list[Override]) -> None:
    for override in overrides:
        resolved.overrides_applied += 1
        resolved.applied.append((".".join(override.path), override))
        apply_one(resolved, override)


def apply_one(resolved: Any, override: Override) -> None:
    """Apply one override the way Megatron-Bridge's ``apply_overrides`` does: a key that is
    not a field of its config object is skipped (recorded in ``resolved.ignored`` so that
    rules can report it); a mapping merges into an existing object or dict."""
    interp = resolved.interp
    owner: Any = resolved.root
    for depth, part in enumerate(override.path[:-1]):
        if _unknown_field(owner, part):
            resolved.ignored.append((".".join(override.path[: depth + 1]), override))
            return
        child = owner.get(part)
        if not isinstance(child, Obj):
            if override.action == "delete" or isinstance(child, Unknown):
                return
            child = interp.new_obj(None, override.origin)
            owner.set(part, child, override.origin)
        owner = child
    leaf = override.path[-1]
    if override.action == "delete":
        owner.writable().pop(leaf, None)
        return
    if _unknown_field(owner, leaf):
        resolved.ignored.append((".".join(override.path), override))
        return
    current = owner.get(leaf)
    if override.action == "merge":
        if not isinstance(current, Obj):
            owner.set(leaf, interp.new_obj(None, override.origin), override.origin)
        return
    if isinstance(override.value, dict) and isinstance(current, Obj) and "_target_" not in override.value:
        merge_mapping(resolved, current, override.value, override, override.path)
        return
    owner.set(leaf, to_graph(interp, override.value, override.origin), override.origin)


def merge_mapping(resolved: Any, target: Obj, mapping: dict, override: Override, path: tuple) -> None:
    for key, item in mapping.items():
        if _unknown_field(target, key):
            resolved.ignored.append((".".join(path + (key,)), override))
            continue
        current = target.get(key)
        if isinstance(item, dict) and isinstance(current, Obj):
            merge_mapping(resolved, current, item, override, path + (key,))
        else:
            target.set(key, to_graph(resolved.interp, item, override.origin), override.origin)


def _unknown_field(owner: Obj, name: str) -> bool:
    """A config object (not a dict, not an open HF provider) without that field."""
    return owner.cls is not None and name not in owner.cls.fields and name not in owner.fields and not owner.open


def to_graph(interp: Any, value: Any, origin: Origin) -> Any:
    if isinstance(value, dict):
        target = value.get("_target_")
        spec = interp.schema.find_class(str(target).rsplit(".", 1)[-1]) if isinstance(target, str) else None
        obj = interp.new_obj(spec, origin)
        if spec is not None:
            for name, fspec in spec.fields.items():
                obj.set(name, interp.default_for(fspec, origin), origin)
        for key, item in value.items():
            if key != "_target_":
                obj.set(key, to_graph(interp, item, origin), origin)
        return obj
    if isinstance(value, list):
        return [to_graph(interp, item, origin) for item in value]
    return value


def apply_yaml_file(resolved: Any, path: Path) -> None:
    display = resolved.interp.finder.display(path)
    apply_overrides(resolved, yaml_overrides(path, display))


def apply_dotlist(resolved: Any, items: list[str], source: str = "--set") -> None:
    overrides = []
    for index, item in enumerate(items, start=1):
        origin = Origin(source, index, 1, index, len(item) + 1, "override", _next_seq())
        overrides.append(parse_dotlist(item, origin))
    apply_overrides(resolved, overrides)
