"""OT008 and the deprecated model.cuda_graph_scope while CUDA graphs are off, in a release whose
validate() does not clear the scope (0.5.1 with Megatron-Core 0.18.2). The case is the 0.5.1
recipes' own: 177 of them write `cuda_graph_impl = "none"` then `cuda_graph_scope = "full"`
(recipes/deepseek/deepseek_v2.py:75-76 and the like). Megatron-Core 0.18.2 moves the scope to
cuda_graph_modules (transformer_config.py:2159-2182), which "has no effect when
cuda_graph_impl="none"" (:939): the line changes nothing, and nobody acts on a finding there.
A "full_iteration" scope is the exception: Megatron-Core turns it into cuda_graph_impl =
"full_iteration" whatever the implementation (cuda_graph_config.py:10-13, 129-136;
transformer_config.py:2195-2214)."""

from __future__ import annotations

from wheels import wheel_root

from mblint.engine import CheckOptions, Engine

RECIPE = '''\
from megatron.bridge import AutoBridge
from megatron.bridge.recipes.common import _pretrain_common
from megatron.bridge.training.config import ConfigContainer


def {name}_config() -> ConfigContainer:
    cfg = _pretrain_common()
    cfg.model = AutoBridge.from_hf_pretrained("deepseek-ai/DeepSeek-V2-Lite").to_megatron_provider(load_weights=False)
    cfg.model.cuda_graph_impl = {impl!r}
    cfg.model.cuda_graph_scope = {scope!r}
    return cfg
'''


def ot008_lines(tmp_path, impl, scope):
    recipe = tmp_path / "recipe.py"
    recipe.write_text(RECIPE.format(name="example", impl=impl, scope=scope))
    engine = Engine(CheckOptions(select=("OT008",), search_paths=(wheel_root("0.5.1"),)))
    report = engine.check_paths([str(recipe)])
    assert report.resolved == 1 and report.schemas[0]["megatron_bridge_version"] == "0.5.1"
    return [finding.location.line for finding in report.findings]


def test_a_scope_without_graphs_is_not_reported(tmp_path):
    assert ot008_lines(tmp_path, "none", "full") == []
    assert ot008_lines(tmp_path, "none", ["attn", "moe_router"]) == []


def test_a_scope_with_graphs_is_reported(tmp_path):
    assert ot008_lines(tmp_path, "transformer_engine", ["attn"]) == [10]


def test_a_full_iteration_scope_turns_graphs_on_and_is_reported(tmp_path):
    assert ot008_lines(tmp_path, "none", "full_iteration") == [10]
