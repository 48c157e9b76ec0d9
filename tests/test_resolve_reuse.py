"""What the resolver keeps and reuses between recipes and calls: memoized results copied per
call (with the sharing inside a result kept), paths resolved once, default tables of classes."""

from __future__ import annotations

import collections
from pathlib import Path

from mblint.resolve import Project
from mblint.schema import load_schema

IMPORTS = "from megatron.bridge.training.config import ConfigContainer, TrainingConfig\n\n\n"


def write_team(tmp_path: Path, recipes: str, helpers: str = "") -> Path:
    team = tmp_path / "team"
    team.mkdir()
    (team / "__init__.py").write_text("")
    (team / "helpers.py").write_text(helpers)
    (team / "recipes.py").write_text(IMPORTS + recipes)
    return team / "recipes.py"


def test_each_call_of_a_memoized_function_gets_its_own_copy_with_its_sharing_kept(tmp_path):
    recipes = write_team(tmp_path,
                         "def _parts(n):\n"
                         '    inner = {"k": n}\n'
                         '    return {"first": inner, "second": inner}\n\n\n'
                         "def mixing_config():\n"
                         "    p = _parts(1)\n"
                         '    p["first"]["k"] = 5\n'
                         "    q = _parts(1)\n"
                         '    return ConfigContainer(train=TrainingConfig(micro_batch_size=p["second"]["k"], '
                         'global_batch_size=q["first"]["k"]))\n\n\n'
                         "def later_config():\n"
                         "    q = _parts(1)\n"
                         '    return ConfigContainer(train=TrainingConfig(micro_batch_size=q["second"]["k"], '
                         "global_batch_size=8))\n")
    project = Project([], "0.6", tmp_path)
    mixing = project.resolve_function(recipes, "mixing_config")
    assert mixing.value("train.micro_batch_size") == 5, "one object under two keys stays one object"
    assert mixing.value("train.global_batch_size") == 1, "a second call gets a fresh copy"
    assert project.resolve_function(recipes, "later_config").value("train.micro_batch_size") == 1


def test_a_path_is_resolved_once_however_often_it_is_met(tmp_path, monkeypatch):
    recipes = write_team(tmp_path,
                         "from team import helpers\n"
                         "from team.helpers import size\n\n\n"
                         "def one_config():\n"
                         "    return ConfigContainer(train=TrainingConfig(micro_batch_size=size(), "
                         "global_batch_size=helpers.size()))\n\n\n"
                         "def two_config():\n"
                         "    return ConfigContainer(train=TrainingConfig(micro_batch_size=helpers.size(), "
                         "global_batch_size=8))\n",
                         "def size():\n    return 2\n")
    from mblint.extract.modules import RealPaths

    resolved = collections.Counter()
    real_resolve = RealPaths._resolve
    monkeypatch.setattr(RealPaths, "_resolve",
                        lambda self, path, absolute: resolved.update([absolute]) or real_resolve(self, path, absolute))
    project = Project([], "0.6", tmp_path)
    for name in ("one_config", "two_config"):
        assert project.recipe_functions(recipes)
        assert project.resolve_function(recipes, name).value("train.micro_batch_size") == 2
    assert resolved[str(recipes)] == 1
    assert resolved[str(recipes.parent / "helpers.py")] == 1
    assert max(resolved.values()) == 1, resolved


def test_constructed_fields_keep_the_class_order_with_unknown_keywords_last(tmp_path):
    recipes = write_team(tmp_path,
                         "def order_config():\n"
                         "    return ConfigContainer(train=TrainingConfig(not_a_field=3, global_batch_size=8, "
                         "micro_batch_size=2))\n")
    cfg = Project([], "0.6", tmp_path).resolve_function(recipes, "order_config")
    declared = list(load_schema("0.6").find_class("TrainingConfig").fields)
    assert cfg.keys("train") == declared + ["not_a_field"]
    assert [o.kind for o in cfg.origins("train.micro_batch_size")] == ["set"]
    assert [o.kind for o in cfg.origins("train.exit_interval")] == ["default"]
    assert len(cfg.origins("train.not_a_field")) == 1


def test_the_first_call_gets_the_result_itself_and_the_step_budget_counts_its_copy_as_before(tmp_path):
    inner = ", ".join(f'"k{index}": {{}}' for index in range(150))
    recipes = write_team(tmp_path,
                         "import os\n\n\n"
                         "def _big():\n"
                         f"    big = {{{inner}}}\n"
                         '    if os.environ.get("X"):  # two ways out: the result is a merge of both\n'
                         '        big["k0"]["y"] = 1\n'
                         "        return big\n"
                         '    big["k0"]["y"] = 2\n'
                         "    return big\n\n\n"
                         "def first_config():\n"
                         "    big = _big()\n"
                         '    big["k0"]["x"] = 1\n'
                         "    return None\n\n\n"
                         "def again_config():\n"
                         "    big = _big()\n"
                         '    return ConfigContainer(train=TrainingConfig(micro_batch_size=big["k0"].get("x", 0), '
                         "global_batch_size=8))\n")
    project = Project([], "0.6", tmp_path)
    interp = project.interpreter_for(recipes)
    assert project.resolve_graph(recipes, "first_config") is None
    assert len(interp.objects) == 151, "the dict and its 150 dicts, not copied"
    # As when the first call got a copy: 9 statements, 4 snapshots in _big (151 objects: 1
    # step each), a copy of a 150-field table (1), the snapshot at the return (302 objects: 3).
    assert interp.steps == 9 + 4 + 1 + 3
    again = project.resolve_function(recipes, "again_config")
    assert again.value("train.micro_batch_size") == 0, "the first caller's write is not in the copy"


def test_only_the_latest_unused_recipe_results_stay_memoized(tmp_path, monkeypatch):
    """A recipe's result stays memoized for another recipe to reuse; unused ones are dropped,
    oldest first, beyond MAX_UNUSED_RECIPE_RESULTS; a reused one stays."""
    from mblint.extract import calls

    monkeypatch.setattr(calls, "MAX_UNUSED_RECIPE_RESULTS", 1)
    recipes = write_team(tmp_path,
                         "def base_config():\n"
                         "    return ConfigContainer(train=TrainingConfig(micro_batch_size=1))\n\n\n"
                         "def user_config():\n"
                         "    cfg = base_config()\n"
                         "    cfg.train.micro_batch_size = 2\n"
                         "    return cfg\n\n\n"
                         "def other_config():\n"
                         "    return ConfigContainer(train=TrainingConfig(micro_batch_size=3))\n")
    project = Project([], "0.6", tmp_path)
    for name, size in (("base_config", 1), ("user_config", 2), ("other_config", 3)):
        assert project.resolve_function(recipes, name).value("train.micro_batch_size") == size
    interp = project.interpreter_for(recipes)
    scope = interp.scope_for(recipes)
    memoized = {name for name in ("base_config", "user_config", "other_config")
                if interp.memo_key(scope.lookup(name), [], {}) in interp.memo}
    assert memoized == {"base_config", "other_config"}
    assert project.resolve_function(recipes, "user_config").value("train.micro_batch_size") == 2


REUSED_HELPERS = (IMPORTS + "def make_train(size):\n"
                  "    train = TrainingConfig(global_batch_size=8)\n"
                  "    train.micro_batch_size = size\n"
                  "    note = None\n"
                  "    note.text = 'x'\n"
                  "    from team import broken\n"
                  "    train.exit_signal = broken.SIGNAL\n"
                  "    return train\n")
REUSING_RECIPES = ("from team.helpers import make_train\n\n\n"
                   "def first_config():\n"
                   "    return ConfigContainer(train=make_train(2))\n\n\n"
                   "def second_config():\n"
                   "    cfg = ConfigContainer(train=TrainingConfig(global_batch_size=16))\n"
                   "    cfg.train.train_iters = 10\n"
                   "    cfg.train = make_train(2)\n"
                   "    cfg.train.eval_iters = 3\n"
                   "    return cfg\n")


def provenance(cfg) -> tuple:
    """Every field's origins (place, kind, the lines of the calls that reached it) and the
    fields ordered by when they were last set, which is what rules read of ``seq``."""
    places = {path: [(o.path, o.line, o.column, o.kind, tuple(site.origin().line for site in o.via))
                     for o in cfg.origins(path)] for path in cfg.fields}
    order = sorted((path for path in cfg.fields if cfg.origins(path)), key=lambda p: (cfg.origins(p)[-1].seq, p))
    errors = [(o.line, target, attr) for o, target, _, attr in cfg.attribute_errors]
    return places, order, errors, cfg.notes


def test_a_reused_result_reads_as_if_the_call_had_been_made_where_it_is_reused(tmp_path):
    """A memoized result handed to a later recipe: its origins come after what that recipe set
    before the call, are reached through that recipe's call line, and its attribute errors
    and notes are recorded for that recipe too, as when the recipe is resolved on its own."""
    recipes = write_team(tmp_path, REUSING_RECIPES, REUSED_HELPERS)
    (recipes.parent / "broken.py").write_text("def (:\n")
    alone = provenance(Project([], "0.6", tmp_path).resolve_function(recipes, "second_config"))
    project = Project([], "0.6", tmp_path)
    project.resolve_function(recipes, "first_config")  # computes and memoizes make_train(2)
    reused = provenance(project.resolve_function(recipes, "second_config"))
    assert reused == alone
    places, order, errors, notes = reused
    call_line = REUSING_RECIPES.splitlines().index("    cfg.train = make_train(2)") + 1 + IMPORTS.count("\n")
    assert places["train.micro_batch_size"] == [("team/helpers.py", 5, 13, "default", (call_line,)),
                                                ("team/helpers.py", 6, 5, "set", (call_line,))]
    assert order.index("train.train_iters") < order.index("train.micro_batch_size") < order.index("train.eval_iters")
    assert errors == [(8, "note", "text")]
    assert len(notes) == 1 and "broken.py:1" in notes[0], notes


def test_the_last_origin_of_a_reused_result_reads_as_the_last_of_its_origins(tmp_path):
    recipes = write_team(tmp_path, REUSING_RECIPES, REUSED_HELPERS)
    (recipes.parent / "broken.py").write_text("def (:\n")
    project = Project([], "0.6", tmp_path)
    project.resolve_function(recipes, "first_config")
    cfg = project.resolve_function(recipes, "second_config")
    paths = ["train.micro_batch_size", "train.train_iters", "train.eval_iters", "train.global_batch_size"]
    lasts = {path: cfg.last_origin(path) for path in paths}  # asked before any origins() answer
    for path in paths:
        expected = cfg.origins(path)[-1]
        assert (lasts[path], lasts[path].seq, lasts[path].via) == (expected, expected.seq, expected.via), path
    assert lasts["train.micro_batch_size"].via[0].origin().line == 14, "reached through second_config's call"
