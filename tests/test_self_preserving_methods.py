"""Issue 33 (precision): a method of a config object that cannot change the object is no gap.
The schema lists, per config class, the methods whose bodies cannot write to ``self``
(``self_preserving_methods``), derived from the source; the interpreter leaves the object as it is
when a recipe calls one, and a method that is only ``return replace(self, field=parameter)``
gives a copy with that field. Megatron-Bridge 0.6.2's qwen2_audio recipe calls
``HFDatasetSourceConfig.with_split`` (data/sources/hf.py:124-126), which CV001 reported."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from integration_support import BAD_RECIPE, IMPORTS, PK001_LINE, run
from mblint.schema.extract import SourceIndex, extract_classes
from mblint.schema.self_preserving import self_preserving_methods

CORE = """
    from dataclasses import dataclass

    @dataclass
    class CoreConfig:
        size: int = 1

        def core_check(self):
            assert self.size > 0
"""

BRIDGE = """
    import copy
    from dataclasses import dataclass, replace, fields
    from megatron.core.base import CoreConfig

    def helper(x):
        x.size = 3

    @dataclass
    class Source:
        split: str | None = None
        name: str = "a"
        kwargs: dict | None = None
        child: "Source | None" = None

        def with_split(self, split: str) -> "Source":
            \"\"\"A copy selecting another split.\"\"\"
            return replace(self, split=split)

        def check(self) -> None:
            if self.split is not None and not self.split:
                raise ValueError(f"split must be non-empty: {self.split!r}")
            options = self.kwargs or {}
            for item in fields(self):
                assert isinstance(getattr(self, item.name), object)
            return len(self.name) > 0 and options is not None

        def checked_twice(self):
            self.check()
            return copy.deepcopy(self)

        def assigns(self):
            self.split = "train"

        def augments(self):
            self.name += "x"

        def deletes(self):
            del self.kwargs

        def sets_by_name(self):
            setattr(self, "split", None)

        def sets_through_object(self):
            object.__setattr__(self, "split", None)

        def stores_in_a_part(self):
            self.kwargs["k"] = 1

        def changes_an_alias(self):
            options = self.kwargs or {}
            options["k"] = 1

        def changes_a_part(self):
            self.kwargs.update(k=1)

        def returns_itself(self):
            return self

        def returns_a_part(self):
            return self.child

        def hands_itself_over(self):
            helper(self)

        def calls_one_that_assigns(self):
            self.assigns()

        def shallow_copy_changed(self):
            other = copy.copy(self)
            other.child.name = "b"

        def calls_back(self):
            return self.calls_forth()

        def calls_forth(self):
            return self.calls_back()

        @property
        def upper(self):
            return self.name.upper()

    @dataclass
    class NamedSource(Source):
        def assigns(self):
            return None

    @dataclass
    class StrictSource(Source):
        def with_split(self, split):
            self.split = split
            return self

    @dataclass
    class BridgeConfig(CoreConfig):
        extra: int = 0

        def own_check(self):
            assert self.extra >= 0

        def uses_super(self):
            super().core_check()
"""


def _index(root: Path, with_core: bool = True) -> SourceIndex:
    files = {"megatron/__init__.py": "", "megatron/bridge/__init__.py": "", "megatron/bridge/sources.py": BRIDGE}
    if with_core:
        files.update({"megatron/core/__init__.py": "", "megatron/core/base.py": CORE})
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return SourceIndex.from_dirs([root])


def test_methods_that_cannot_change_self_are_derived(tmp_path):
    index = _index(tmp_path)
    methods = self_preserving_methods(index, extract_classes(index))
    source = "megatron.bridge.sources.Source"
    assert methods[source] == {
        "check": {}, "checked_twice": {},
        "with_split": {"replace": {"split": "split"}, "params": ["split"]},
    }
    # inherited methods resolve through the bases; an override decides for the subclass
    assert methods["megatron.bridge.sources.NamedSource"] == {**methods[source], "assigns": {},
                                                              "calls_one_that_assigns": {}}
    assert methods["megatron.bridge.sources.StrictSource"] == {"check": {}, "checked_twice": {}}
    assert methods["megatron.bridge.sources.BridgeConfig"] == {"core_check": {}, "own_check": {}}
    assert methods["megatron.core.base.CoreConfig"] == {"core_check": {}}


def test_a_base_out_of_sight_hides_what_its_subclass_inherits(tmp_path):
    """A schema derived from a Megatron-Bridge tree without Megatron-Core: the class's own
    methods are read, what it would inherit from the unseen base is not listed."""
    index = _index(tmp_path, with_core=False)
    classes = {q: c for q, c in extract_classes(index).items() if q.startswith("megatron.bridge.")}
    methods = self_preserving_methods(index, classes)
    assert methods["megatron.bridge.sources.BridgeConfig"] == {"own_check": {}}


@pytest.mark.parametrize("version", ["0.6.2"])
def test_the_bundled_release_has_the_fact(version):
    from mblint.schema import load_schema

    methods = load_schema(version).facts["self_preserving_methods"]
    assert methods["megatron.bridge.data.sources.hf.HFDatasetSourceConfig"]["with_split"] == {
        "replace": {"split": "split"}, "params": ["split"]}
    # validate() assigns to self (training/config.py: ConfigContainer.validate)
    assert "validate" not in methods["megatron.bridge.training.config.ConfigContainer"]
    assert "get_data_parallel_size" in methods["megatron.bridge.training.config.ConfigContainer"]


def _findings(tmp_path: Path, statement: str, imports: str = "") -> list[tuple]:
    text = BAD_RECIPE.replace(IMPORTS, IMPORTS + imports).replace("    return cfg\n", statement + "    return cfg\n")
    (tmp_path / "r.py").write_text(text)
    document = json.loads(run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path).stdout)
    return [(f["rule"], f["location"]["line"]) for f in document["findings"]]


def test_a_method_that_cannot_change_cfg_leaves_it_known(tmp_path):
    """ConfigContainer.get_data_parallel_size only reads self (0.6.2 training/config.py): cfg
    stays known, so PK001 is still reported and there is no gap."""
    statement = "    cfg.get_data_parallel_size(8)\n"
    assert _findings(tmp_path, statement) == [("PK001", PK001_LINE)]


def test_a_method_that_assigns_to_cfg_is_still_a_gap(tmp_path):
    """ConfigContainer.validate assigns to fields of self: what cfg holds after it is unknown."""
    assert _findings(tmp_path, "    cfg.validate()\n") == [("CV001", 15)]


RECIPE = """from megatron.bridge.data.builders import DirectHFSFTDatasetConfig, HFDatasetSourceConfig
from megatron.bridge.training.config import ConfigContainer, TrainingConfig


def audio_config(split="validation"):
    source = HFDatasetSourceConfig(dataset_name="cv17")
    validation_source = source.with_split(split)
    test_source = source.with_split(split=None)
    cfg = ConfigContainer(
        train=TrainingConfig(micro_batch_size=1, global_batch_size=8),
        dataset=DirectHFSFTDatasetConfig(seq_length=2048, source=source, validation_source=validation_source,
                                         test_source=test_source),
    )
    return cfg
"""


def test_a_copy_made_by_replace_has_the_field_the_call_sets(tmp_path):
    """with_split is ``return replace(self, split=split)``: source keeps its split, the copy has
    the one given, and every other field of source."""
    from mblint.resolve import resolve

    (tmp_path / "r.py").write_text(RECIPE)
    cfg = resolve(tmp_path / "r.py", "audio_config", search_paths=[], version="0.6.2", override_files=[], dotlist=[])
    assert cfg.value("dataset.source.split") is None
    assert cfg.value("dataset.validation_source.split") == "validation"
    assert cfg.value("dataset.validation_source.dataset_name") == "cv17"
    assert cfg.value("dataset.test_source.split") is None
    assert cfg.value("dataset.test_source.dataset_name") == "cv17"
    document = json.loads(run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path).stdout)
    assert [f["rule"] for f in document["findings"] if f["rule"].startswith("CV")] == []


def test_megatron_bridge_recipe_calling_with_split_has_no_gap(tmp_path, mb06):
    """0.6.2 recipes/qwen2_audio/h100/qwen2_audio.py:155 `source.with_split("validation")`, with
    the schema derived from the wheel's own source (CV001 there on main)."""
    folder = mb06 / "megatron" / "bridge" / "recipes" / "qwen2_audio"
    result = run(["check", "--no-cache", "--cache-dir", str(tmp_path / "cache"), "--format", "json", str(folder)],
                 tmp_path)
    document = json.loads(result.stdout)
    assert document["schemas"][0]["source"].startswith("derived from")
    assert [f["rule"] for f in document["findings"] if f["rule"] == "CV001"] == []


def test_a_derived_schema_is_derived_again_when_the_bundled_data_changes(monkeypatch):
    """The derived schema takes facts (this one among them) from the bundled release it is
    built on: its cache key names that release's data file, which is named by its content."""
    from mblint.schema import derive, load_schema

    base = load_schema("0.6.2")
    before = derive.content_key([], base)
    releases = {**derive.bundled_releases(), "0.6.2": {"file": "mb-regenerated.json.gz"}}
    monkeypatch.setattr(derive, "bundled_releases", lambda: releases)
    assert derive.content_key([], base) != before
