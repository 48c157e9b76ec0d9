"""Issue 24, the resolved values themselves: ``if [not] self.flag: self.x = <constant>`` in the
``__post_init__`` a config class inherits (Megatron-Core >= 0.17.1's CheckpointConfig sets
async_strategy to "mcore" without async_save) is derived from the source and applied at
construction only, as Python runs it: later assignments to the object are not normalised."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mblint.model import is_known
from mblint.schema.extract import SourceIndex, extract_classes
from mblint.schema.facts import init_normalisations
from mblint.testing import HEADER_06

CORE = """
    from dataclasses import dataclass

    @dataclass(kw_only=True)
    class SaveConfig:
        background: bool = False
        strategy: str = "fast"
        verify: bool = False
        fmt: str = "dist"
        mode: str = "a"

        def __post_init__(self):
            assert self.strategy in ["fast", "safe"]
            if not self.background:
                self.strategy = "safe"
            if self.verify:
                self.fmt = "dist"
            if self.verify:
                self.mode = "b"
                print(self.mode)
            if self.verify:
                self.mode = "c"
            else:
                self.mode = "d"
"""

BRIDGE = """
    from dataclasses import dataclass
    from megatron.core.save import SaveConfig as CoreSaveConfig

    @dataclass(kw_only=True)
    class SaveConfig(CoreSaveConfig):
        path: str | None = None

        def finalize(self):
            if not self.background:
                self.strategy = "never applied at construction"

    @dataclass(kw_only=True)
    class OwnInitSaveConfig(CoreSaveConfig):
        def __post_init__(self):
            pass
"""


def _index(root: Path, with_core: bool = True) -> SourceIndex:
    files = {"megatron/__init__.py": "", "megatron/bridge/__init__.py": "", "megatron/bridge/save.py": BRIDGE}
    if with_core:
        files.update({"megatron/core/__init__.py": "", "megatron/core/save.py": CORE})
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return SourceIndex.from_dirs([root])


def test_conditional_constant_of_an_inherited_post_init_is_derived(tmp_path):
    index = _index(tmp_path)
    rules = init_normalisations(index, extract_classes(index), {})
    # only the plain `if [not] self.flag: self.x = constant` (no else, nothing else in the body)
    assert rules["SaveConfig"] == {"strategy": {"value": "safe", "if_not": "background"},
                                   "fmt": {"value": "dist", "if": "verify"}}
    assert "OwnInitSaveConfig" not in rules  # its own __post_init__ replaces the base's
    assert "megatron/core/save.py:" in rules["_source"]


def test_a_base_the_source_does_not_hold_keeps_the_known_rules(tmp_path):
    """A schema derived from a Megatron-Bridge tree without Megatron-Core keeps the bundled
    release's rules for a class whose __post_init__ is Megatron-Core's."""
    index = _index(tmp_path, with_core=False)
    classes = {q: c for q, c in extract_classes(index).items() if q.startswith("megatron.bridge.")}
    known = {"SaveConfig": {"strategy": {"value": "safe", "if_not": "background"}, "p": {"from": "q"}}}
    rules = init_normalisations(index, classes, {}, known)
    assert rules["SaveConfig"] == {"strategy": {"value": "safe", "if_not": "background"}}
    assert "OwnInitSaveConfig" not in init_normalisations(index, classes, {}, {"OwnInitSaveConfig": known["SaveConfig"]})


RECIPE = """
from megatron.bridge.training.config import CheckpointConfig


def example_config(flag):
    cfg = _pretrain_common()
    cfg.checkpoint = CheckpointConfig(save="/ckpt")
    late = CheckpointConfig(save="/ckpt")
    late.async_save = True
    on = CheckpointConfig(save="/ckpt", async_save=True)
    reset = CheckpointConfig(save="/ckpt")
    reset.async_strategy = "nvrx"
    unknown = CheckpointConfig(save="/ckpt", async_save=flag)
    cfg.logger.wandb_project = late.async_strategy
    cfg.logger.wandb_exp_name = on.async_strategy
    cfg.logger.wandb_entity = reset.async_strategy
    cfg.logger.wandb_save_dir = unknown.async_strategy
    return cfg
"""


def test_async_strategy_is_what_the_constructor_leaves(tmp_path, mb06):
    """Megatron-Bridge 0.6.2's CheckpointConfig inherits Megatron-Core 0.19.2's __post_init__
    (megatron/training/config/training_config.py:632-633): "mcore" unless constructed with
    async_save; setting async_save afterwards does not re-run it."""
    from mblint.resolve import resolve

    recipe = tmp_path / "recipe.py"
    recipe.write_text(HEADER_06 + RECIPE)
    cfg = resolve(recipe, "example_config", search_paths=[mb06], version="0.6.2", override_files=[], dotlist=[])
    assert cfg.value("checkpoint.async_strategy") == "mcore"
    late, on, reset = (cfg.value(f"logger.wandb_{name}") for name in ("project", "exp_name", "entity"))
    assert (late, on, reset) == ("mcore", "nvrx", "nvrx")
    assert not is_known(cfg.value("logger.wandb_save_dir"))


@pytest.mark.parametrize("version,rule", [("0.3.1", None), ("0.4.0", None),
                                          ("0.4.2", {"value": "mcore", "if_not": "async_save"}),
                                          ("0.6.2", {"value": "mcore", "if_not": "async_save"})])
def test_the_bundled_releases_have_the_rule_where_their_megatron_core_has_it(version, rule):
    """Megatron-Core 0.16.x has no CheckpointConfig (0.3.x's is Megatron-Bridge's own, no
    async_strategy); 0.17.0's __post_init__ only asserts; 0.17.1 onwards sets "mcore"."""
    from mblint.schema import load_schema

    rules = load_schema(version).overlay.get("init_normalisations", {})
    assert rules.get("CheckpointConfig", {}).get("async_strategy") == rule
