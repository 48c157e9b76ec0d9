"""Origins are values: equal by place (not by kind, order or call chain), and they
survive the worker pipes (pickle) with every field."""

from __future__ import annotations

import pickle

from mblint.model import Origin


def test_an_origin_is_equal_by_its_place():
    made = Origin("recipe.py", 3, 5, 4, 9, "default", 17, ("call",))
    same_place = Origin("recipe.py", 3, 5, 4, 9, "set", 2)
    assert made == same_place and hash(made) == hash(same_place)
    assert made != Origin("recipe.py", 3, 6, 4, 9, "default", 17, ("call",))
    assert len({made, same_place}) == 1


def test_kind_seq_and_via_have_defaults():
    assert [getattr(Origin("a.py", 1, 2, 1, 3), name) for name in ("kind", "seq", "via")] == ["set", 0, ()]


def test_an_origin_pickles_with_every_field():
    origin = Origin("recipe.py", 3, 5, 4, 9, "override", 17, ("call",))
    copy = pickle.loads(pickle.dumps(origin, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(copy) is Origin
    assert (copy.path, copy.line, copy.column, copy.end_line, copy.end_column, copy.kind, copy.seq, copy.via) == \
        ("recipe.py", 3, 5, 4, 9, "override", 17, ("call",))
