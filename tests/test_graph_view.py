"""GraphView.extra_fields keeps its analysis of a field table across configurations that
share the table (copy-on-write twins); a later write must still be seen."""

from __future__ import annotations

from mblint import resolve
from mblint.extract.values import Obj
from mblint.resolve import GraphView
from mblint.schema import ClassSpec


def spec(name: str, *fields: str) -> ClassSpec:
    return ClassSpec(f"m.{name}", name, "m", (), fields=dict.fromkeys(fields))


def container(train: Obj) -> Obj:
    root = Obj(spec("ConfigContainer", "train", "env_vars", "model"))
    root.set("train", train, None)
    env = Obj(None)
    env.set("ANY", "1", None)
    root.set("env_vars", env, None)
    return root


def test_extra_fields_below_objects_and_dicts():
    train = Obj(spec("TrainingConfig", "iters"))
    train.set("iters", 3, None)
    train.set("iterz", 3, None)
    root = container(train)
    root.set("stray", 1, None)
    assert GraphView(root).extra_fields() == ["train.iterz", "stray"]


def test_twins_share_the_analysis_of_their_table():
    train = Obj(spec("TrainingConfig", "iters"))
    train.set("iterz", 3, None)
    assert GraphView(container(train)).extra_fields() == ["train.iterz"]
    twin = train.twin()
    entry = resolve._MARKED[id(twin.fields)]
    assert entry[0] is twin.fields
    assert GraphView(container(twin)).extra_fields() == ["train.iterz"]
    assert resolve._MARKED[id(twin.fields)] is entry  # found, not worked out again


def test_a_write_after_the_analysis_is_seen():
    train = Obj(spec("TrainingConfig", "iters", "seed"))
    train.set("iters", 3, None)
    assert GraphView(container(train)).extra_fields() == []
    train.set("sead", 1, None)  # the analysed table is frozen: this write copies it
    assert GraphView(container(train)).extra_fields() == ["train.sead"]
    other = Obj(spec("ValidationConfig", "seed"))
    other.fields = train.fields  # the same table under another class
    other.shared = True
    assert GraphView(container(other)).extra_fields() == ["train.iters", "train.sead"]


def test_cycles_and_open_objects_are_skipped():
    train = Obj(spec("TrainingConfig", "iters", "parent"))
    root = container(train)
    train.set("parent", root, None)
    train.set("iterz", 1, None)
    hf = Obj(spec("Provider", "layers"))
    hf.set("anything", 1, None)
    hf.mark_open()
    root.set("model", hf, None)
    assert GraphView(root).extra_fields() == ["train.iterz"]


def extra_fields_of(tmp_path, body: str, module_level: str = "") -> list[str]:
    """extra_fields() of the configuration a recipe builds (resolved, never run)."""
    from mblint.resolve import Project

    recipe = tmp_path / "recipe.py"
    recipe.write_text(
        "from megatron.bridge.training.config import ConfigContainer, TrainingConfig\n"
        f"{module_level}\n\n"
        "def my_config():\n" + "".join(f"    {line}\n" for line in body.splitlines()))
    return sorted(Project([], "0.6", tmp_path).resolve_function(recipe, "my_config").extra_fields())


def test_a_table_known_to_hold_declared_fields_only_still_shows_later_strays(tmp_path):
    """The interpreter marks a table whose keys its class declares, so that extra_fields()
    need not compare it with the class; every way a stray key gets in must drop the mark."""
    assert extra_fields_of(tmp_path, "cfg = ConfigContainer(train=TrainingConfig(micro_batch_size=1))\n"
                                     "return cfg") == []
    assert extra_fields_of(tmp_path, "cfg = ConfigContainer(train=TrainingConfig(micro_batch_sizee=1))\n"
                                     "return cfg") == ["train.micro_batch_sizee"]
    assert extra_fields_of(tmp_path, "cfg = ConfigContainer(train=TrainingConfig())\n"
                                     "cfg.train.micro_batch_sizee = 2\n"
                                     "return cfg") == ["train.micro_batch_sizee"]
    assert extra_fields_of(tmp_path, "cfg = BASE\n"  # a copy of a module-level object
                                     "cfg.train.micro_batch_sizee = 2\n"
                                     "return cfg",
                           module_level="BASE = ConfigContainer(train=TrainingConfig())") == ["train.micro_batch_sizee"]
    assert extra_fields_of(tmp_path, "cfg = BASE\nreturn cfg",  # the copy of a table with a stray key
                           module_level="BASE = ConfigContainer(train=TrainingConfig())\n"
                                        "BASE.train.seqq = 1\n"
                                        "BASE.strayy = 2") == ["strayy", "train.seqq"]
    assert extra_fields_of(tmp_path, "cfg = ConfigContainer(train=TrainingConfig())\n"
                                     "setattr(cfg.train, 'seqq', 3)\n"
                                     "return cfg") == ["train.seqq"]


def test_types_and_origins_are_answered_from_memory(monkeypatch):
    from mblint.model import EffectiveConfig, Origin, RecipeRef

    train = Obj(spec("TrainingConfig", "iters"))
    set_at = Origin("r.py", 3, 5, 3, 20)
    train.set("iters", 3, set_at)
    view = GraphView(container(train))
    walked = []
    walk = resolve._walk_to
    monkeypatch.setattr(resolve, "_walk_to", lambda root, memo, path: walked.append(path) or walk(root, memo, path))
    cfg = EffectiveConfig(RecipeRef("r.py", "f"), graph=view)
    for _ in range(3):
        assert cfg.type_of("train") == "TrainingConfig"
        assert cfg.type_of("train.iters") is None
        assert cfg.origins("train.iters") == (set_at,)
        assert cfg.origins("train.nothing") == ()
    assert sorted(walked) == ["train", "train.iters", "train.iters", "train.nothing"]


def test_a_used_view_is_freed_without_the_cyclic_collector():
    """The checking run turns the cyclic collector off: a view (and the graph and answers it
    holds) in a reference cycle would stay until the run ends, one per configuration."""
    import gc
    import weakref

    from mblint.model import EffectiveConfig, RecipeRef

    train = Obj(spec("TrainingConfig", "iters"))
    train.set("iters", 3, None)
    view = GraphView(container(train))
    cfg = EffectiveConfig(RecipeRef("r.py", "f"), graph=view)
    assert cfg.value("train.iters") == 3 and cfg.type_of("train") == "TrainingConfig"
    assert cfg.origins("train.iters") == () and view.extra_fields() == []
    gone = weakref.ref(view)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        del view, cfg
        assert gone() is None
    finally:
        if was_enabled:
            gc.enable()


def test_keys_outside_a_set_of_names_keep_their_order():
    """``keys_outside`` is ``keys`` filtered by a set of names, for graphs and flat tables alike."""
    from mblint.model import EffectiveConfig, RecipeRef, ResolvedField

    model = Obj(spec("Provider", "layers", "hidden"))
    for key in ("layers", "zeta", "hidden", "alpha"):
        model.set(key, 1, None)
    env = Obj(None)
    env.set(1, "a", None)  # a dict key that is no string reads as its text
    env.set("B", "b", None)
    root = Obj(spec("ConfigContainer", "model", "env_vars"))
    root.set("model", model, None)
    root.set("env_vars", env, None)
    cfg = EffectiveConfig(RecipeRef("r.py", "f"), graph=GraphView(root))
    names = frozenset({"layers", "hidden", "1"})
    assert cfg.keys_outside("model", names) == ["zeta", "alpha"]
    assert cfg.keys_outside("model", frozenset({"layers", "hidden", "zeta", "alpha"})) == []
    assert cfg.keys_outside("env_vars", names) == ["B"]
    assert cfg.keys_outside("model.layers", names) == [] and cfg.keys_outside("nothing", names) == []
    flat = EffectiveConfig(RecipeRef("r.py", "f"), fields={f"model.{key}": ResolvedField(f"model.{key}", 1)
                                                           for key in ("layers", "zeta", "alpha")},
                           types={"": "ConfigContainer", "model": "Provider"})
    assert flat.keys_outside("model", names) == ["alpha", "zeta"]  # a flat table's keys are sorted


def test_child_types_are_the_types_of_the_object_nodes_below():
    """``child_types`` answers ``type_of`` for every object below a node at once, in key order,
    for graphs and flat tables alike."""
    from mblint.model import EffectiveConfig, RecipeRef, ResolvedField

    train = Obj(spec("TrainingConfig", "iters"))
    root = container(train)
    root.set("seed", 1, None)
    hf = Obj(spec("Provider", "layers"))
    hf.label = "HFModelProvider"
    root.set("model", hf, None)
    cfg = EffectiveConfig(RecipeRef("r.py", "f"), graph=GraphView(root))
    types = cfg.child_types("")
    assert types == {"train": "TrainingConfig", "env_vars": "dict", "model": "HFModelProvider"}
    assert list(types) == [key for key in cfg.keys("") if cfg.type_of(key) is not None]
    assert cfg.child_types("train") == {} and cfg.child_types("seed") == {} and cfg.child_types("none") == {}
    flat = EffectiveConfig(RecipeRef("r.py", "f"), fields={"seed": ResolvedField("seed", 1)},
                           types={"": "ConfigContainer", "train": "TrainingConfig", "train.inner": "Inner"})
    assert flat.child_types("") == {"train": "TrainingConfig"} and flat.child_types("train") == {"inner": "Inner"}
