"""Object state: new objects, copies, snapshots, and merging the states two paths leave."""

from __future__ import annotations

import operator
from itertools import compress

from mblint.extract.scopes import Frame
from mblint.extract.values import MAX_ORIGINS, Obj, Rebase, _versions, children_among, merge_values
from mblint.model import UNKNOWN, Origin
from mblint.schema import ClassSpec

_FIELDS, _OPEN, _VERSION, _CHILDREN = (operator.attrgetter(name) for name in ("fields", "open", "version", "_children"))


def _ordered_union(first: dict, second: dict) -> list:
    return list(first) + [key for key in second if key not in first]


def _merge_tables(other: dict, current: dict) -> dict:
    """Field tables of two paths merged slot by slot, in ``current``'s order then ``other``'s
    new keys; slots both paths share are kept as they are."""
    merged = dict(current)
    if len(other) == len(current) and list(other) == list(current):  # the same keys: compared in step
        for key in list(compress(other, map(operator.is_not, other.values(), current.values()))):
            merged[key] = _merge_slots(other[key], current[key])
        return merged
    differing = compress(other, map(operator.is_not, other.values(), map(current.get, other)))
    for key in list(differing):
        merged[key] = _merge_slots(other[key], current.get(key))
    for key in current.keys() - other.keys():
        merged[key] = _merge_slots(None, current[key])
    return merged


def _merge_into_first(other: dict, current: dict) -> dict:
    """``_merge_tables(other, current)``, written into ``other`` when it holds ``current``'s keys
    in their order, then its new keys (the merged table's order)."""
    keys = list(other)
    if keys[:len(current)] != list(current):
        return _merge_tables(other, current)
    for key in list(compress(keys, map(operator.is_not, other.values(), map(current.get, keys)))):
        other[key] = _merge_slots(other[key], current.get(key))
    return other


def _merge_slots(left: tuple | None, right: tuple | None) -> tuple:
    if left is None or right is None:
        present = left or right
        return (UNKNOWN, present[1])
    value = merge_values(left[0], right[0])
    origins = left[1] if left[1] == right[1] else _merge_origins(left[1], right[1])
    return (value, origins)


def _merge_origins(left: tuple, right: tuple) -> tuple:
    """``left``, then the origins of ``right`` it lacks; kept to ``MAX_ORIGINS`` (the first and
    the latest) as a write keeps them: a field set in each of thousands of unknown branches
    stays linear (each merge once compared every origin with every other: cubic in all)."""
    known = set(left)
    merged = list(left)
    merged.extend(origin for origin in right if origin not in known)
    if len(merged) > MAX_ORIGINS:
        merged = merged[:1] + merged[1 - MAX_ORIGINS:]
    return tuple(merged)


class StateMixin:
    """Objects, copies, snapshots and merges of the states of two paths. Part of ``Interpreter``."""

    def new_obj(self, cls: ClassSpec | None, origin: Origin | None) -> Obj:
        obj = Obj(cls, origin)
        self.objects.append(obj)
        return obj

    def copy_obj(self, obj: Obj, memo: dict, frozen: dict | None = None, rebase: Rebase | None = None) -> Obj:
        """A module-level object read from a recipe, or a memoized result: each call gets its
        own copy. ``frozen``: the states a result's objects were frozen in (``freeze_result``);
        ``rebase``: how the origins of a reused result read in the call reusing it."""
        copy = memo.get(obj.oid)
        if copy is not None:
            return copy
        if frozen is None:
            fields = obj.fields
        else:
            fields, is_open, children, declared, stored = frozen[obj.oid]
        size = len(fields)
        if size >= 100:
            self.charge(size)
        if frozen is None:
            keys = obj.child_keys()
            copy = obj.twin()
        else:
            keys = children[1]
            copy = obj.twin_in(fields, is_open, children, declared, stored)
        if rebase is not None:
            copy.rebase += (rebase,)
        memo[obj.oid] = copy
        self.objects.append(copy)
        if not keys:
            return copy
        copy.fields = table = dict(fields)
        copy.shared = False
        if copy.declared is fields:  # the same keys
            copy.declared = table
        for key in keys:
            value, origins = table[key]
            table[key] = (self.copy_obj(value, memo, frozen, rebase), origins)
        copy._children = (table, keys)
        return copy

    def snapshot(self, frame: Frame) -> dict:
        """The state of every object and local; field tables are shared, not copied."""
        objects = self.objects
        self.charge(len(objects) + self.uncopied)
        for obj in objects:
            obj.shared = True
        return {"objects": list(objects), "fields": list(map(_FIELDS, objects)), "open": list(map(_OPEN, objects)),
                "versions": list(map(_VERSION, objects)), "children": list(map(_CHILDREN, objects)),
                "locals": dict(frame.locals)}

    def restore(self, snap: dict, frame: Frame) -> None:
        states = zip(snap["objects"], snap["fields"], snap["open"], snap["versions"], snap["children"])
        for obj, fields, is_open, version, children in states:
            if obj.version == version and obj.fields is fields and obj.open == is_open and obj.shared:
                continue  # untouched since the snapshot
            obj.fields = fields
            obj._children = children  # true of ``fields`` if it was then
            obj.shared = True
            obj.open = is_open
            obj.version = version
        frame.locals.clear()
        frame.locals.update(snap["locals"])

    def merge_into_current(self, other: dict, frame: Frame, base: dict | None = None) -> None:
        """Merge a snapshot taken at the end of another path into the current state. Objects
        whose version is the ``base`` one on both paths were not touched and are skipped."""
        base_versions = base["versions"] if base is not None else []
        states = zip(other["objects"], other["fields"], other["open"], other["versions"])
        for index, (obj, fields, is_open, version) in enumerate(states):
            if index < len(base_versions) and version == base_versions[index] == obj.version:
                continue
            if fields is obj.fields and is_open == obj.open:
                continue
            obj.open = obj.open or is_open
            current = obj.fields
            obj.fields = merged = _merge_tables(fields, current)
            children = obj._children
            # A merged slot holds an object only where both paths hold that same object.
            obj._children = children_among(merged, children[1]) if children and children[0] is current else None
            obj.shared = False
            obj.version = next(_versions)
        for name in _ordered_union(frame.locals, other["locals"]):
            frame.locals[name] = merge_values(other["locals"].get(name, UNKNOWN), frame.locals.get(name, UNKNOWN))

    def merge_start_into_current(self, start: dict, frame: Frame) -> None:
        """The state that ``restore(start)`` then ``merge_into_current(current, start)`` leave
        (a path that changed nothing merged with the current one), without the snapshot of the
        current state: a table only this path wrote is merged in place."""
        states = zip(start["objects"], start["fields"], start["open"], start["versions"], start["children"])
        for obj, fields, is_open, version, children in states:
            if obj.version == version or (obj.fields is fields and obj.open == is_open):
                continue
            current = obj.fields
            obj.open = is_open or obj.open
            if obj.shared:
                obj.fields = merged = _merge_tables(current, fields)
            else:  # only this object holds it
                obj.fields = merged = _merge_into_first(current, fields)
                obj.declared = None  # not a table its class declares after merging, as a new table is not
            obj._children = children_among(merged, children[1]) if children and children[0] is fields else None
            obj.shared = False
            obj.version = next(_versions)
        current_locals = dict(frame.locals)
        frame.locals.clear()
        frame.locals.update(start["locals"])
        for name in _ordered_union(frame.locals, current_locals):
            frame.locals[name] = merge_values(current_locals.get(name, UNKNOWN), frame.locals.get(name, UNKNOWN))

