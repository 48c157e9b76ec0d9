"""Edits of YAML override files.

ruamel.yaml's round-trip dumper re-flows some documents (indentation of sequences, spacing
before comments, quoting of untouched scalars), so this writer does not re-dump: it uses
ruamel's composer to find the exact character span of the key or value to change and splices
new text there. Everything outside that span stays byte-identical; the result is re-loaded
and must hold the intended value at the intended key, or the edit is refused.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any


class YamlEditError(Exception):
    pass


@dataclass(frozen=True)
class YamlEdit:
    """``action``: set | rename | remove | move. ``line``/``column`` are the 1-based position of
    the key (the origin of an override). ``key_path`` is the field path the key stands for.
    ``new_key`` is the new name (rename) or the new dotted path from the document root (move)."""

    action: str
    line: int
    column: int
    key_path: str
    value: Any = None
    new_key: str | None = None


def _compose(text: str):
    from ruamel.yaml import YAML

    return YAML(typ="rt").compose(text)


def _load(text: str):
    from ruamel.yaml import YAML

    return YAML(typ="rt").load(text)


def _find_key(node, line: int, column: int, prefix: tuple = ()):
    """(mapping node, key node, value node, key path) of the key at 0-based line/column."""
    from ruamel.yaml.nodes import MappingNode

    if not isinstance(node, MappingNode):
        return None
    for key, value in node.value:
        path = prefix + (str(key.value),)
        if key.start_mark.line == line and key.start_mark.column == column:
            return node, key, value, path
        if isinstance(value, MappingNode):
            found = _find_key(value, line, column, path)
            if found:
                return found
    return None


def render_scalar(value: Any, old_style: str | None = None) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise YamlEditError(f"cannot write {value!r} in YAML")
        text = repr(value)
        return text if ("." in text or "e" not in text) else text.replace("e", ".0e", 1)
    if isinstance(value, str):
        if old_style == "'" and "\n" not in value:
            return "'" + value.replace("'", "''") + "'"
        if old_style == '"':
            return json.dumps(value)
        plain_ok = value and value.strip() == value and not any(c in value for c in ":#{}[],&*!|>'\"%@`\n")
        if plain_ok:
            try:
                if _load(f"k: {value}\n")["k"] == value:
                    return value
            except Exception:  # noqa: BLE001
                pass
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(render_scalar(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{render_scalar(str(k))}: {render_scalar(v)}" for k, v in value.items()) + "}"
    raise YamlEditError(f"cannot write a {type(value).__name__} value in YAML")


def _value_splice(text: str, key, value, new_value) -> tuple[int, int, str]:
    """The splice that puts ``new_value`` in place of the value node of ``key``."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode, SequenceNode

    if isinstance(value, ScalarNode):
        if value.start_mark.line != value.end_mark.line or value.style in ("|", ">"):
            raise YamlEditError("multi-line scalar")
        if value.tag == "tag:yaml.org,2002:null" and value.start_mark.index == value.end_mark.index:
            # `key:` with nothing after it: write after the colon.
            colon = text.find(":", key.end_mark.index)
            if colon < 0:
                raise YamlEditError("no colon after key")
            return (colon + 1, colon + 1, " " + render_scalar(new_value))
        return (value.start_mark.index, value.end_mark.index, render_scalar(new_value, value.style))
    if isinstance(value, (SequenceNode, MappingNode)) and value.flow_style and \
            value.start_mark.line == value.end_mark.line:
        return (value.start_mark.index, value.end_mark.index, render_scalar(new_value))
    raise YamlEditError("the value is a block mapping or sequence")


def apply_yaml_edits(text: str, edits: list[YamlEdit]) -> str:
    """Apply edits to ``text``; raises ``YamlEditError`` when any edit cannot be made exactly."""

    try:
        root = _compose(text)
    except Exception as error:  # noqa: BLE001
        raise YamlEditError(f"cannot read YAML: {error}") from error
    splices: list[tuple[int, int, str]] = []
    checks: list[tuple[tuple, Any, bool]] = []
    moved: list[tuple[tuple, tuple]] = []
    for edit in edits:
        found = _find_key(root, edit.line - 1, edit.column - 1)
        if found is None:
            raise YamlEditError(f"no key at {edit.line}:{edit.column}")
        mapping, key, value, path = found
        if edit.action == "set":
            splices.append(_value_splice(text, key, value, edit.value))
            checks.append((path, edit.value, True))
        elif edit.action == "rename":
            new_key = edit.new_key or ""
            if not new_key or "." in new_key:
                raise YamlEditError("the new key must be a plain name under the same parent")
            if any(str(k.value) == new_key for k, _ in mapping.value):
                raise YamlEditError(f"{new_key!r} is already a key here")
            if key.start_mark.line != key.end_mark.line:
                raise YamlEditError("multi-line key")
            splices.append((key.start_mark.index, key.end_mark.index, render_scalar(new_key, key.style)))
            if edit.value is not None:
                splices.append(_value_splice(text, key, value, edit.value))
            checks.append((path[:-1] + (new_key,), _MISSING, False))
            checks.append((path, _MISSING, True))
        elif edit.action == "remove":
            splices.append(_line_span(text, mapping, key, value) + ("",))
            checks.append((path, _MISSING, True))
        elif edit.action == "move":
            start, end = _line_span(text, mapping, key, value)
            new_path = tuple((edit.new_key or "").split("."))
            splices.append((start, end, ""))
            splices.append(_insertion(text, root, new_path, key.start_mark.column, text[key.end_mark.index:end]))
            moved.append((path, new_path))
        else:
            raise YamlEditError(f"unsupported action {edit.action!r}")
    new_text = _splice(text, splices)
    try:
        document = _load(new_text)
    except Exception as error:  # noqa: BLE001
        raise YamlEditError(f"edited YAML does not load: {error}") from error
    for path, expected, _ in checks:
        actual = _get(document, path)
        if expected is _MISSING:
            continue
        if not _same(actual, expected):
            raise YamlEditError(f"{'.'.join(path)} reads back as {actual!r}, not {expected!r}")
    for path, expected, absent in checks:
        if expected is _MISSING and absent is False and _get(document, path) is _MISSING:
            raise YamlEditError(f"{'.'.join(path)} is missing after the edit")
    old_document = _load(text) if moved else None
    for old_path, new_path in moved:
        if _get(document, old_path) is not _MISSING or \
                not _same(_get(document, new_path), _get(old_document, old_path)):
            raise YamlEditError(f"{'.'.join(old_path)} did not move to {'.'.join(new_path)}")
    return new_text


def _line_span(text: str, mapping, key, value) -> tuple[int, int]:
    """The lines of one ``key: value`` entry (with its end-of-line comment) that can be cut out
    without leaving the parent empty or touching other content."""
    if len(mapping.value) < 2:
        raise YamlEditError("removing the only key would leave its parent null")
    if mapping.flow_style:
        raise YamlEditError("flow mapping")
    end_mark = value.end_mark if value.end_mark.index > key.end_mark.index else key.end_mark
    start = text.rfind("\n", 0, key.start_mark.index) + 1
    if text[start:key.start_mark.index].strip():
        raise YamlEditError("the key shares its line with other content")
    end = text.find("\n", end_mark.index)
    end = len(text) if end < 0 else end + 1
    tail = text[end_mark.index:end].strip()
    if tail and not tail.startswith("#"):
        raise YamlEditError("other content follows the value")
    return start, end


def _child(node, name: str):
    from ruamel.yaml.nodes import MappingNode

    if not isinstance(node, MappingNode):
        return None
    return next((value for key, value in node.value if str(key.value) == name), None)


def _insertion(text: str, root, new_path: tuple, indent: int, rest: str) -> tuple[int, int, str]:
    """Where and what to insert for ``new_path: <rest of the moved line>``: after the last entry
    of the existing parent mapping, or as a new top-level section at the end of the file."""
    from ruamel.yaml.nodes import MappingNode, ScalarNode

    *parents, leaf = new_path
    if "\n" in rest.rstrip("\r\n"):
        raise YamlEditError("only a one-line entry can be moved")
    node = root
    for depth, name in enumerate(parents):
        child = _child(node, name)
        if child is None:
            if depth or len(parents) != 1 or not isinstance(root, MappingNode) or root.flow_style:
                raise YamlEditError(f"no section {'.'.join(parents[:depth + 1])} to move the key into")
            newline = "\r\n" if "\r\n" in text else "\n"
            lead = "" if not text or text.endswith("\n") else newline
            return len(text), len(text), f"{lead}{name}:{newline}{' ' * indent}{leaf}{rest}"
        node = child
    if not isinstance(node, MappingNode) or node.flow_style or not node.value:
        raise YamlEditError(f"{'.'.join(parents)} is not a block mapping")
    if any(str(k.value) == leaf for k, _ in node.value):
        raise YamlEditError(f"{'.'.join(new_path)} is already set in this file")
    last_key, last_value = node.value[-1]
    if not isinstance(last_value, ScalarNode) or last_value.end_mark.line != last_key.start_mark.line:
        raise YamlEditError(f"the last entry of {'.'.join(parents)} is not a one-line value")
    at = text.find("\n", last_value.end_mark.index)
    if at < 0:
        raise YamlEditError("no line end after the last entry")
    return at + 1, at + 1, f"{' ' * last_key.start_mark.column}{leaf}{rest}"


class _Missing:
    pass


_MISSING = _Missing()


def _get(document: Any, path: tuple) -> Any:
    node = document
    for part in path:
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _same(actual: Any, expected: Any) -> bool:
    if isinstance(expected, (list, tuple)):
        return isinstance(actual, (list, tuple)) and len(actual) == len(expected) and all(
            _same(a, e) for a, e in zip(actual, expected))
    if isinstance(expected, dict):
        return isinstance(actual, dict) and set(map(str, actual)) == set(map(str, expected)) and all(
            _same(actual[k], v) for k, v in expected.items())
    if isinstance(expected, bool) or isinstance(actual, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual == expected
    if expected is None:
        return actual is None
    if isinstance(expected, str):
        return isinstance(actual, str) and str(actual) == expected
    if isinstance(expected, (int, float)):
        return isinstance(actual, (int, float)) and actual == expected
    return actual == expected


def _splice(text: str, splices: list[tuple[int, int, str]]) -> str:
    ordered = sorted(splices, key=lambda s: (s[0], s[1]))
    for (s1, e1, _), (s2, e2, _) in zip(ordered, ordered[1:]):
        if s2 < e1 or (s1 == s2 and e1 == e2):
            raise YamlEditError("two edits touch the same text")
    for start, end, new in reversed(ordered):
        text = text[:start] + new + text[end:]
    return text
