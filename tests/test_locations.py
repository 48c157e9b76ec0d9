"""Where a finding lands when the value was set inside an installed library helper: at the
line of the recipe that called the helper, never in the library, never in another recipe."""

from __future__ import annotations

from pathlib import Path

from fix_rules import RULES, make_rule
from mblint.engine import CheckOptions, Engine
from mblint.plugins import LoadedPlugins, load_plugins

PLUGIN_RULES = {rule.id: rule for rule in load_plugins().rules}

HEADER = """from megatron.bridge.models import GPTModelProvider
from megatron.bridge.recipes.common import _pretrain_common
from megatron.bridge.utils.cuda_graph import set_cuda_graph_modules
"""


def lint(tmp_path: Path, mb06: Path, source: str, rule) -> list:
    (tmp_path / "recipe.py").write_text(source)
    engine = Engine(CheckOptions(search_paths=(mb06,), version="0.6"), LoadedPlugins(rules=[rule]))
    engine.display_root = tmp_path
    return engine.check_paths([str(tmp_path / "recipe.py")]).findings


def test_value_set_by_a_library_helper_lands_on_the_call(tmp_path, mb06):
    source = HEADER + """

def graphs_config():
    cfg = _pretrain_common()
    cfg.model = GPTModelProvider(num_moe_experts=8, seq_length=4096)
    cfg.model.cuda_graph_impl = "transformer_engine"
    set_cuda_graph_modules(cfg.model, ["moe_preprocess"])  # line 10
    cfg.model.use_te_rng_tracker = True
    return cfg
"""
    [finding] = lint(tmp_path, mb06, source, RULES["CG006"]())
    assert (finding.location.path, finding.location.line, finding.location.column) == ("recipe.py", 10, 5)


def test_a_reused_helper_result_never_points_into_another_recipe(tmp_path, mb06):
    """``_pretrain_common()`` takes no arguments, so the interpreter reuses its result for the
    second recipe; the call site it remembers is the first recipe's."""
    rule = make_rule("TS060", "dataset.seq_length", 4096, 2048)
    source = HEADER + """

def first_config():
    cfg = _pretrain_common()  # line 7
    return cfg


def second_config():
    cfg = _pretrain_common()  # line 12
    return cfg
"""
    findings = lint(tmp_path, mb06, source, rule)
    by_recipe = {f.recipe.split("::")[1]: f.location.line for f in findings}
    assert by_recipe["first_config"] == 7
    assert by_recipe["second_config"] in (11, 12)  # the call, or the function when the call is unknown


FIX_TARGET_HEADER = """from megatron.bridge import AutoBridge
from megatron.bridge.recipes.common import _sft_common


def _hf():
    return AutoBridge.from_hf_pretrained("x").to_megatron_provider(load_weights=False)
"""


def line_of(source: str, marker: str) -> int:
    [line] = [number for number, text in enumerate(source.splitlines(), start=1) if marker in text]
    return line


def test_a_finding_lands_on_the_line_its_fix_edits(tmp_path, mb06):
    """PB008's fix sets sequence_parallel: the finding is on that line even when TP was set
    after it, and the TP line, the value set last (the old primary place), is related."""
    source = FIX_TARGET_HEADER + """

def sp_config():
    cfg = _sft_common()
    cfg.model = _hf()
    cfg.model.sequence_parallel = True  # fix target
    cfg.model.tensor_model_parallel_size = 1  # set last
    return cfg
"""
    [finding] = lint(tmp_path, mb06, source, PLUGIN_RULES["PB008"])
    assert finding.location.line == line_of(source, "# fix target")
    assert [related.origin.line for related in finding.related] == [line_of(source, "# set last")]
    assert [fix.field for fix in finding.fixes] == ["model.sequence_parallel"]


def test_a_fix_target_set_by_the_recipe_built_on_stays_there(tmp_path, mb06):
    """Modelled on a 0.6.2 long-context variant (nemotron_3_super ..._32k_config) that calls
    its parent recipe and sets TP 1 while the parent set SP: the parent's SP line serves
    every recipe built on it, so the variant's finding stays on its own TP line."""
    source = FIX_TARGET_HEADER + """

def parent_config():
    cfg = _sft_common()
    cfg.model = _hf()
    cfg.model.tensor_model_parallel_size = 8
    cfg.model.sequence_parallel = True  # parent
    return cfg


def parent_long_config():
    cfg = parent_config()
    cfg.model.tensor_model_parallel_size = 1  # variant
    return cfg
"""
    [finding] = lint(tmp_path, mb06, source, PLUGIN_RULES["PB008"])
    assert finding.recipe.endswith("::parent_long_config")
    assert finding.location.line == line_of(source, "# variant")
    assert [related.origin.line for related in finding.related] == [line_of(source, "# parent")]


LOCAL_HEADER = """import os

from megatron.bridge import AutoBridge
from megatron.bridge.recipes.common import _sft_common
"""


def test_a_value_from_a_local_variable_names_its_assignment(tmp_path, mb06):
    """Modelled on the 0.6.2 Llama SFT recipes (`seq_length = 4096`, then
    `cfg.dataset.seq_length = seq_length` and the pack width from it)."""
    source = LOCAL_HEADER + """

def sft_config():
    cfg = _sft_common()
    cfg.model = AutoBridge.from_hf_pretrained("meta-llama/Llama-3.2-1B").to_megatron_provider(load_weights=False)
    seq_length = 4096  # local
    cfg.model.seq_length = seq_length
    cfg.dataset.seq_length = seq_length  # dataset
    width = 2048  # width
    cfg.dataset.offline_packing_specs.packed_sequence_size = width  # pack
    return cfg
"""
    [finding] = lint(tmp_path, mb06, source, PLUGIN_RULES["PK006"])
    assert finding.location.line == line_of(source, "# pack")
    places = [(related.origin.line, related.message) for related in finding.related]
    assert places == [(line_of(source, "# width"), "the value 2048 comes from this assignment"),
                      (line_of(source, "# dataset"), "dataset.seq_length = 4096 is set here"),
                      (line_of(source, "# local"), "the value 4096 comes from this assignment")]


def test_a_local_assignment_undone_by_a_branch_is_not_named(tmp_path, mb06):
    """The branch that reassigns the local leaves the function (it raises): the value stored
    later is the one assigned before the branch, never the branch's."""
    source = LOCAL_HEADER + """

def sft_config():
    cfg = _sft_common()
    cfg.model = AutoBridge.from_hf_pretrained("meta-llama/Llama-3.2-1B").to_megatron_provider(load_weights=False)
    width = 4096  # before
    if os.environ.get("LONG"):
        width = 1024  # branch
        raise ValueError(width)
    cfg.dataset.offline_packing_specs.packed_sequence_size = width  # pack
    return cfg
"""
    [finding] = lint(tmp_path, mb06, source, PLUGIN_RULES["PK006"])
    assert finding.location.line == line_of(source, "# pack")
    assert "packed_sequence_size is 4096" in finding.message
    assert line_of(source, "# branch") not in [related.origin.line for related in finding.related]


# ----- a shared helper in the linted files is where a problem shows, not where it was chosen ----
# (issue 33 section 4: PB013 at recipes/deepseek/h100/deepseek_v3.py:62, the shared layout
# helper, instead of the perf recipe's VP line; PK006 at the shared recipes/utils/dataset_utils.py:132)

SHARED_HELPER = '''from megatron.bridge.models import GPTModelProvider
from megatron.bridge.recipes.common import _pretrain_common


def set_layout(model_cfg, layout):
    model_cfg.pipeline_model_parallel_layout = layout  # line 6: shared by every recipe


def base_config():
    cfg = _pretrain_common()
    cfg.model = GPTModelProvider(num_layers=13, hidden_size=64, num_attention_heads=4)
    cfg.model.pipeline_model_parallel_size = 4
    cfg.model.virtual_pipeline_model_parallel_size = 2
    set_layout(cfg.model, "Et|(tt|)*6L")
    return cfg


def derived_config():
    cfg = base_config()
    cfg.model.virtual_pipeline_model_parallel_size = 4  # line 20: this recipe's choice
    set_layout(cfg.model, "Et|(tt|)*6L")
    return cfg
'''


def test_a_conflict_with_a_shared_helper_lands_on_the_recipes_own_line(tmp_path, mb06):
    findings = lint(tmp_path, mb06, SHARED_HELPER, PLUGIN_RULES["PB013"])
    by_recipe = {f.recipe.rpartition("::")[2]: f for f in findings}
    assert set(by_recipe) == {"derived_config"}  # the layout's 8 stages are PP 4 x VP 2, not x 4
    assert by_recipe["derived_config"].location.line == 20


PACKED_ON_A_BASE_BUILDER = '''from megatron.bridge.recipes.common import _sft_common


def long_context_config():
    cfg = _sft_common()
    cfg.dataset.seq_length = 8192  # line 6: the recipe's choice; the pack width is the builder's
    cfg.model.seq_length = 8192
    return cfg
'''


def test_a_pack_width_from_the_base_builder_lands_on_the_recipes_seq_length(tmp_path, mb06):
    root = tmp_path / "project"
    (root / "recipes").mkdir(parents=True)
    source = root / "recipes" / "long.py"
    source.write_text(PACKED_ON_A_BASE_BUILDER)
    engine = Engine(CheckOptions(search_paths=(mb06,), version="0.6"), LoadedPlugins(rules=[PLUGIN_RULES["PK006"]]))
    engine.display_root = root
    [finding] = engine.check_paths([str(source)]).findings
    assert (Path(finding.location.path).name, finding.location.line) == ("long.py", 6)


def test_a_world_size_finding_leaves_a_base_recipe_named_for_another_count(tmp_path, mb06):
    """Issue 33 section 4 (0.6.2 perf_recipes/nemotronh/b200/nemotronh.py:63, 485): a 256-GPU
    recipe built on the 64-GPU one keeps its global batch 192, which DP 128 does not divide; the
    64-GPU base is fine (DP 32), so PB003 lands on the 256-GPU recipe's call to it. A variant
    named for the same 64 GPUs shares the base's problem when there is one: it stays there."""
    source = HEADER + """

def big_pretrain_64gpu_h100_bf16_config():
    cfg = _pretrain_common()
    cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)
    cfg.model.tensor_model_parallel_size = 2
    cfg.train.global_batch_size = 192  # line 10
    cfg.train.micro_batch_size = 1
    return cfg


def big_pretrain_256gpu_h100_bf16_config():
    cfg = big_pretrain_64gpu_h100_bf16_config()  # line 16
    return cfg


def big_pretrain_64gpu_h100_fp8_config():
    cfg = big_pretrain_64gpu_h100_bf16_config()
    cfg.train.global_batch_size = 80  # line 22
    return cfg


def odd_pretrain_64gpu_h100_fp8_config():
    cfg = big_pretrain_64gpu_h100_bf16_config()
    cfg.train.micro_batch_size = 5  # line 28: 192 % (5 * 32) != 0, chosen here
    return cfg
"""
    findings = lint(tmp_path, mb06, source, PLUGIN_RULES["PB003"])
    by_recipe = {f.recipe.split("::")[1]: (f.location.line, [r.origin.line for r in f.related]) for f in findings}
    assert by_recipe["big_pretrain_256gpu_h100_bf16_config"][0] == 16
    assert 10 in by_recipe["big_pretrain_256gpu_h100_bf16_config"][1]  # the base's value, related
    assert by_recipe["big_pretrain_64gpu_h100_fp8_config"][0] == 22
    assert by_recipe["odd_pretrain_64gpu_h100_fp8_config"][0] == 28
    assert "big_pretrain_64gpu_h100_bf16_config" not in by_recipe
