"""Mechanisms that make resolving cheaper without changing answers: kept child keys of shared
field tables."""

from __future__ import annotations

import random

from mblint.extract.values import Obj


def _children_by_hand(obj: Obj) -> tuple:
    return tuple(key for key, (value, _) in obj.fields.items() if type(value) is Obj)


def test_twin_shares_the_child_keys_of_the_shared_table():
    parent = Obj(None)
    parent.set("a", Obj(None), None)
    parent.set("b", 1, None)
    assert parent.child_keys() == ("a",)
    twin = parent.twin()
    assert twin._children is parent._children  # not worked out again for the same table
    twin.set("c", Obj(None), None)  # the twin's table is copied before the write
    assert twin.child_keys() == ("a", "c")
    assert parent.child_keys() == ("a",)


def test_child_keys_stay_true_through_writes_twins_and_restores():
    rng = random.Random(7)
    objects = [Obj(None) for _ in range(4)]
    saved: list[tuple[Obj, dict]] = []
    for _ in range(3000):
        obj = rng.choice(objects)
        action = rng.randrange(7)
        if action == 0:
            obj.set(rng.choice("abcdef"), rng.choice(objects), None)
        elif action == 1:
            obj.set(rng.choice("abcdef"), rng.randrange(3), None)
        elif action == 2:
            obj.writable().pop(rng.choice("abcdef"), None)
        elif action == 3 and len(objects) < 40:
            objects.append(obj.twin())
        elif action == 4:
            obj.shared = True  # as a snapshot leaves it
            saved.append((obj, obj.fields))
        elif action == 5 and saved:
            owner, fields = rng.choice(saved)
            owner.fields, owner.shared = fields, True  # as restore() does
        else:
            assert obj.child_keys() == _children_by_hand(obj)
    for obj in objects:
        assert obj.child_keys() == _children_by_hand(obj)
