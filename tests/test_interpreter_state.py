"""Mechanisms that make resolving cheaper without changing answers: kept child keys of shared
field tables, real paths built folder by folder, one read per recipe file."""

from __future__ import annotations

import random
from pathlib import Path

from mblint.extract.interpreter import Interpreter
from mblint.extract.limits import MAX_INT_BITS, MAX_VALUE_SIZE, _oversized, _walked_oversized
from mblint.extract.modules import ModuleFinder, RealPaths
from mblint.extract.scopes import Frame
from mblint.extract.values import Obj
from mblint.model import UNKNOWN, Origin, Unknown
from mblint.resolve import Project
from mblint.schema import load_schema


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


def test_child_keys_are_carried_through_writes_and_copies():
    parent = Obj(None)
    parent.set("a", Obj(None), None)
    parent.set("b", 1, None)
    assert parent.child_keys() == ("a",)
    parent.shared = True  # as a snapshot leaves it: the next write copies the table
    parent.set("b", 2, None)
    assert parent._children == (parent.fields, ("a",))
    parent.set("c", Obj(None), None)
    parent.set("a", Obj(None), None)
    assert parent._children == (parent.fields, ("a", "c"))
    parent.set("b", Obj(None), None)  # an object where a scalar was: worked out when asked
    assert parent.child_keys() == ("a", "b", "c")
    copy = Interpreter(load_schema("0.6"), ModuleFinder([])).copy_obj(parent, {})
    assert copy._children[0] is copy.fields and copy.child_keys() == ("a", "b", "c")


def test_real_paths_agree_with_path_resolve(tmp_path, monkeypatch):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "x" / "y" / "r.py").write_text("")
    (tmp_path / "a" / "b" / "c" / "r.py").write_text("")
    (tmp_path / "a" / "link").symlink_to(tmp_path / "x")
    (tmp_path / "a" / "b" / "rel").symlink_to(Path("..") / ".." / "x" / "y")
    (tmp_path / "a" / "b" / "c" / "file_link.py").symlink_to(tmp_path / "x" / "y" / "r.py")
    (tmp_path / "a" / "loop").symlink_to(tmp_path / "a" / "loop")
    monkeypatch.chdir(tmp_path / "a")
    real_paths = RealPaths()
    for name in ["b/c/r.py", "link/y/r.py", "b/rel/r.py", "link/../b/c/r.py", "b/c/file_link.py",
                 "missing/deeper/r.py", "b/c/missing.py", "b", "link", str(tmp_path / "a" / "link" / "y" / "r.py"),
                 "r.py"]:
        path = Path(name)
        assert real_paths.of(path) == path.resolve(), name
        assert real_paths.of(path) == path.resolve(), name  # kept answer
    for name in ["loop/r.py", "loop"]:
        try:
            expected = Path(name).resolve()
        except RuntimeError:
            expected = RuntimeError
        try:
            found = real_paths.of(Path(name))
        except RuntimeError:
            found = RuntimeError
        assert found == expected, name


def test_real_paths_answer_as_resolve_does(tmp_path):
    deep = tmp_path / "p" / "q" / "r" / "s"
    deep.mkdir(parents=True)
    for name in "abc":
        (deep / f"{name}.py").write_text("")
    real_paths = RealPaths()
    real_paths.of(deep / "a.py")
    assert real_paths.of(deep / "b.py") == (deep / "b.py").resolve()
    (tmp_path / "elsewhere").mkdir()
    (deep / "link.py").symlink_to(tmp_path / "elsewhere" / "c.py")
    assert real_paths.of(deep / "link.py") == (tmp_path / "elsewhere" / "c.py").resolve()


def test_package_root_is_above_the_top_package(tmp_path):
    (tmp_path / "top" / "pkg" / "sub").mkdir(parents=True)
    for folder in ("top/pkg", "top/pkg/sub"):
        (tmp_path / folder / "__init__.py").write_text("")
    (tmp_path / "lone").mkdir()
    project = Project(display_root=tmp_path)
    assert project.roots_for(tmp_path / "top" / "pkg" / "sub" / "m.py")[0] == (tmp_path / "top").resolve()
    assert project.roots_for(tmp_path / "top" / "pkg" / "m.py")[0] == (tmp_path / "top").resolve()
    assert project.roots_for(tmp_path / "lone" / "m.py")[0] == (tmp_path / "lone").resolve()


def test_child_keys_kept_by_merges_havoc_and_hf_providers_are_true(tmp_path):
    recipe = tmp_path / "recipe.py"
    recipe.write_text(
        "from megatron.bridge import AutoBridge\n"
        "from megatron.bridge.training.config import ConfigContainer, TrainingConfig\n\n\n"
        "def _box():\n"
        "    return {'inner': {'k': 1}, 'other': {'k': 2}, 'n': 3}\n\n\n"
        "def mixed_config(flag):\n"
        "    model = AutoBridge.from_hf_pretrained('x').to_megatron_provider(load_weights=False)\n"
        "    box = _box()  # memoized: its child keys are known\n"
        "    if flag:\n"
        "        box['inner'] = 5\n"
        "        box['n'] = 4\n"
        "        model.seq_length = 7\n"
        "    else:\n"
        "        box['n'] = 6\n"
        "    held = {'a': {'b': 1}, 'c': 2}\n"
        "    unknown_helper(held)\n"
        "    return ConfigContainer(model=model, train=TrainingConfig(micro_batch_size=box['n']))\n")
    project = Project([], "0.6", tmp_path)
    assert project.resolve_function(recipe, "mixed_config") is not None
    objects = project.interpreter_for(recipe).objects
    kept = [obj for obj in objects if obj._children is not None and obj._children[0] is obj.fields]
    for obj in kept:
        assert obj._children[1] == _children_by_hand(obj), obj
    kept_keys = {obj._children[1] for obj in kept}
    assert ("other",) in kept_keys  # the merged table: "inner" is an object on one path only
    assert ("a",) in kept_keys  # the table havoc went through
    assert any(obj.label == "HFModelProvider" for obj in kept)


def test_the_size_check_of_flat_lists_agrees_with_the_walk():
    rng = random.Random(3)
    scalars = [0, 1, True, None, 2.5, "", "ab", "x" * 4_000, 2 ** MAX_INT_BITS, 2 ** (MAX_INT_BITS - 1), -(2 ** 5000)]
    values = [[], (), ["x" * (MAX_VALUE_SIZE - 1)], ["x" * MAX_VALUE_SIZE], [0] * (MAX_VALUE_SIZE // 2),
              [0] * (MAX_VALUE_SIZE // 2 + 1), ["x" * (MAX_VALUE_SIZE - 2), 1], ["x" * (MAX_VALUE_SIZE - 2), 1, 2],
              [["x" * 3_000] * 3], [["x" * 3_000] * 3] * 2, [[0] * (MAX_VALUE_SIZE // 4)] * 2, [[[0]] * 3]]
    for _ in range(300):
        items = [rng.choice(scalars) for _ in range(rng.randrange(6))]
        if rng.random() < 0.2:
            items.insert(rng.randrange(len(items) + 1), rng.choice([["a"], ("b", 2), {3}, Obj(None), UNKNOWN,
                                                                    [["c"]], ["x" * 4_000, 2 ** MAX_INT_BITS]]))
        values.append(items if rng.random() < 0.5 else tuple(items))
    values += scalars + ["x" * MAX_VALUE_SIZE, "x" * (MAX_VALUE_SIZE + 1), 2 ** MAX_INT_BITS - 1, -(2 ** MAX_INT_BITS)]
    for value in values:
        assert _oversized(value) is _walked_oversized(value), value


def _resolved_root(tmp_path: Path, body: str) -> tuple:
    recipe = tmp_path / "recipe.py"
    recipe.write_text("from megatron.bridge.training.config import ConfigContainer, TrainingConfig\n\n\n" + body)
    project = Project([], "0.6", tmp_path)
    resolved = project.resolve_graph(recipe, "recipe_config")
    return resolved.root, project.interpreter_for(recipe)


def test_field_assignments_store_as_store_does(tmp_path):
    root, interp = _resolved_root(tmp_path, (
        "def recipe_config(n):\n"
        "    cfg = ConfigContainer(train=TrainingConfig(micro_batch_size=1))\n"
        "    cfg.train.global_batch_size = 8\n"
        "    name = 'x'\n"
        "    name.upper = 3\n"
        "    cfg.train.train_iters = 5\n"
        "    for i in range(n):\n"
        "        cfg.train.train_iters = 5\n"
        "    return cfg\n"))
    train = root.fields["train"][0]
    assert train.fields["global_batch_size"][0] == 8
    assert train.fields["global_batch_size"][1][-1].line == 6
    assert isinstance(train.fields["train_iters"][0], Unknown)  # set in a loop (to the value it had)
    assert [(error[1], error[3]) for error in interp.attribute_errors] == [("name", "upper")]


def test_constructed_objects_get_their_own_default_tables(tmp_path):
    root, interp = _resolved_root(tmp_path, (
        "def recipe_config():\n"
        "    first = TrainingConfig()\n"
        "    second = TrainingConfig()\n"
        "    first.train_iters = 3\n"
        "    return ConfigContainer(train=second)\n"))
    train = root.fields["train"][0]
    spec = interp.schema.find_class("TrainingConfig")
    assert list(train.fields) == list(spec.fields)
    assert train.fields["train_iters"][0] == spec.fields["train_iters"].default_value()
    assert train.fields["train_iters"][1][-1].kind == "default"


def _after_one_sided_branch(seed: int, merged_with_the_start: bool) -> list:
    """Objects and locals after a path of random writes is merged with the state before it
    (an `if` without `else`), by merge_start_into_current or by the general snapshot,
    restore and merge."""
    rng = random.Random(seed)
    interp = Interpreter(load_schema("0.6"), ModuleFinder([]))
    frame = Frame(None, locals={"x": 1, "y": 2})  # type: ignore[arg-type]
    objects = [interp.new_obj(None, None) for _ in range(4)]
    values = [0, 1, "a", UNKNOWN, *objects[2:]]
    for number, obj in enumerate(objects):
        for key in rng.sample("abcdefgh", rng.randrange(6)):
            obj.set(key, rng.choice(values), Origin("r.py", number, 1, number, 2))
    start = interp.snapshot(frame)
    held = []  # (table of a snapshot, its items then): never written afterwards
    for step in range(rng.randrange(12)):
        obj = rng.choice(objects)
        action = rng.randrange(6)
        if action == 0:
            obj.writable().pop(rng.choice("abcdefgh"), None)
        elif action == 1:
            obj.mark_open()
        elif action == 2:
            frame.locals[rng.choice("xyz")] = rng.choice(values)
        elif action == 3:
            held += [(table, list(table.items())) for table in interp.snapshot(frame)["fields"]]  # as a return does
        else:
            obj.set(rng.choice("abcdefghij"), rng.choice(values), Origin("r.py", 10 + step, 1, 10 + step, 2))
    if merged_with_the_start:
        interp.merge_start_into_current(start, frame)
    else:
        current = interp.snapshot(frame)
        interp.restore(start, frame)
        interp.merge_into_current(current, frame, start)
    assert all(list(table.items()) == items for table, items in held)

    def shown(value):  # the objects of the two runs compared by their place in the list
        return f"object {objects.index(value)}" if type(value) is Obj else value

    tables = [([(key, shown(value), origins) for key, (value, origins) in obj.fields.items()], obj.open,
               obj.child_keys()) for obj in objects]
    return tables + [[(name, shown(value)) for name, value in frame.locals.items()]]


def test_a_one_sided_branch_merges_as_snapshot_restore_and_merge_do():
    for seed in range(400):
        assert _after_one_sided_branch(seed, True) == _after_one_sided_branch(seed, False), seed


def test_havoc_gives_fields_that_shared_their_origins_one_new_slot(tmp_path):
    interp = Interpreter(load_schema("0.6"), ModuleFinder([tmp_path]))
    defaults, own, at = (Origin("r.py", 1, 1, 1, 2),), (Origin("r.py", 2, 1, 2, 2),), Origin("r.py", 3, 1, 3, 2)
    inner = Obj(None)
    inner.fields = {"x": (1, defaults)}
    obj = Obj(None)
    obj.fields = {"a": (1, defaults), "b": ("s", defaults), "c": (2, own), "d": (inner, own), "e": (3, ())}
    interp.havoc_obj(obj, at)
    fields = obj.fields
    assert fields == {"a": (UNKNOWN, defaults + (at,)), "b": (UNKNOWN, defaults + (at,)), "c": (UNKNOWN, own + (at,)),
                      "d": (inner, own), "e": (UNKNOWN, (at,))}
    assert fields["a"] is fields["b"]  # one slot for a run of fields with one origins tuple
    assert inner.fields == {"x": (UNKNOWN, defaults + (at,))} and obj.open and inner.open
    assert obj.child_keys() == ("d",)
