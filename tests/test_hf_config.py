"""Model architecture from a Hugging Face config.json: where it is found (the local hub cache,
a pinned revision, a local model folder), how Megatron-Bridge 0.6.2's bridges map it to
provider fields, and the scale-out checks that need it, each firing and silent at the boundary.

The config.json files are written here from the public model cards' config.json facts
(architecture fields only); nothing is read from the network or outside the temporary folders.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from mblint.api import resolve_recipe
from mblint.coverage import MODEL_CONFIG_INCOMPLETE
from mblint.hf_config import MAX_CONFIG_BYTES, HFConfigError, find_config, read_config
from mblint.model import NamedObject, is_known

COMMIT = "1" * 40
PINNED = "2" * 40

# zai-org/GLM-4.5 config.json (model card facts): 92 layers, 160 routed experts, 96 heads.
GLM45 = {
    "architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "attention_bias": True,
    "attention_dropout": 0.0, "first_k_dense_replace": 3, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 5120, "initializer_range": 0.02, "intermediate_size": 12288, "max_position_embeddings": 131072,
    "moe_intermediate_size": 1536, "n_group": 1, "n_routed_experts": 160, "n_shared_experts": 1,
    "norm_topk_prob": True, "num_attention_heads": 96, "num_experts_per_tok": 8, "num_hidden_layers": 92,
    "num_key_value_heads": 8, "num_nextn_predict_layers": 1, "partial_rotary_factor": 0.5,
    "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000, "routed_scaling_factor": 2.5,
    "tie_word_embeddings": False, "topk_group": 1, "torch_dtype": "bfloat16", "use_qk_norm": False,
    "vocab_size": 151552,
}
# meta-llama/Meta-Llama-3-8B config.json: 32 layers, 32 heads, 8 key/value heads.
LLAMA3_8B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": False,
    "attention_dropout": 0.0, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
    "intermediate_size": 14336, "max_position_embeddings": 8192, "num_attention_heads": 32,
    "num_hidden_layers": 32, "num_key_value_heads": 8, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 500000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 128256,
}
# Qwen/Qwen3-30B-A3B config.json: 48 layers, 128 experts, 32 heads, 4 key/value heads.
QWEN3_30B_A3B = {
    "architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe", "attention_bias": False,
    "attention_dropout": 0.0, "decoder_sparse_step": 1, "head_dim": 128, "hidden_act": "silu",
    "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 6144, "max_position_embeddings": 40960,
    "mlp_only_layers": [], "moe_intermediate_size": 768, "norm_topk_prob": True, "num_attention_heads": 32,
    "num_experts": 128, "num_experts_per_tok": 8, "num_hidden_layers": 48, "num_key_value_heads": 4,
    "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.001,
    "tie_word_embeddings": False, "torch_dtype": "bfloat16", "vocab_size": 151936,
}


def write_snapshot(hub: Path, repo: str, config: dict, commit: str = COMMIT, ref: str | None = "main",
                   via_blob: bool = True) -> Path:
    """The layout huggingface_hub writes: refs/<ref> names the commit, snapshots/<commit>/config.json
    is a link to blobs/<hash>."""
    folder = hub / ("models--" + repo.replace("/", "--"))
    (folder / "snapshots" / commit).mkdir(parents=True, exist_ok=True)
    target = folder / "snapshots" / commit / "config.json"
    text = json.dumps(config, indent=2)
    if via_blob:
        (folder / "blobs").mkdir(exist_ok=True)
        blob = folder / "blobs" / f"blob{commit[:6]}"
        blob.write_text(text)
        target.symlink_to(os.path.relpath(blob, target.parent))
    else:
        target.write_text(text)
    if ref is not None:
        (folder / "refs").mkdir(exist_ok=True)
        (folder / "refs" / ref).write_text(commit)
    return target


@pytest.fixture
def hub(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "hf_home" / "hub"
    folder.mkdir(parents=True)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf_home"))
    return folder


# ----- finding the config.json ---------------------------------------------------------------


def test_hub_cache_main_ref(hub):
    written = write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", LLAMA3_8B)
    assert find_config("meta-llama/Meta-Llama-3-8B") == written
    config = read_config(written)
    assert config.values["num_hidden_layers"] == 32
    line = json.dumps(LLAMA3_8B, indent=2).splitlines().index('  "num_hidden_layers": 32,') + 1
    assert config.position("num_hidden_layers") == (line, 3, line, 22)


def test_hub_cache_env_order(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "explicit"))
    write_snapshot(tmp_path / "home" / "hub", "org/model", LLAMA3_8B)
    assert find_config("org/model") is None  # HF_HUB_CACHE wins over HF_HOME, as in huggingface_hub
    written = write_snapshot(tmp_path / "explicit", "org/model", LLAMA3_8B)
    assert find_config("org/model") == written


def test_pinned_revision(hub):
    write_snapshot(hub, "Qwen/Qwen3-30B-A3B", dict(QWEN3_30B_A3B, num_hidden_layers=1))
    pinned = write_snapshot(hub, "Qwen/Qwen3-30B-A3B", QWEN3_30B_A3B, commit=PINNED, ref=None)
    assert find_config("Qwen/Qwen3-30B-A3B", PINNED) == pinned
    assert read_config(find_config("Qwen/Qwen3-30B-A3B")).values["num_hidden_layers"] == 1
    assert find_config("Qwen/Qwen3-30B-A3B", "3" * 40) is None  # that snapshot is not in the cache
    branch = write_snapshot(hub, "Qwen/Qwen3-30B-A3B", QWEN3_30B_A3B, commit="4" * 40, ref="v2")
    assert find_config("Qwen/Qwen3-30B-A3B", "v2") == branch
    assert find_config("Qwen/Qwen3-30B-A3B", "../main") is None


def test_local_folder_and_config_folders(tmp_path, hub):
    model = tmp_path / "checkpoints" / "my-llama"
    model.mkdir(parents=True)
    (model / "config.json").write_text(json.dumps(LLAMA3_8B))
    assert find_config(str(model)) == model / "config.json"
    folders = tmp_path / "configs"
    (folders / "org" / "model").mkdir(parents=True)
    (folders / "org" / "model" / "config.json").write_text(json.dumps(LLAMA3_8B))
    assert find_config("org/model", config_folders=[folders]) == folders / "org" / "model" / "config.json"
    assert find_config("org/model") is None


def test_links_out_and_oversized_files_are_refused(tmp_path, hub):
    outside = tmp_path / "elsewhere.json"
    outside.write_text(json.dumps(LLAMA3_8B))
    folder = hub / "models--org--linked"
    (folder / "snapshots" / COMMIT).mkdir(parents=True)
    (folder / "snapshots" / COMMIT / "config.json").symlink_to(outside)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    with pytest.raises(HFConfigError, match="not read: a link out of"):
        find_config("org/linked")
    big = write_snapshot(hub, "org/big", LLAMA3_8B, via_blob=False)
    big.write_text(" " * (MAX_CONFIG_BYTES + 1) + "{}")
    with pytest.raises(HFConfigError, match="too large"):
        read_config(big)
    bad = write_snapshot(hub, "org/bad", LLAMA3_8B, via_blob=False)
    bad.write_text("{not json")
    with pytest.raises(HFConfigError, match="not valid JSON"):
        read_config(bad)


# ----- provider fields, the way the bridges map them -----------------------------------------

RECIPE = """from megatron.bridge import AutoBridge
from megatron.bridge.recipes.common import _pretrain_common


def model_config():
    cfg = _pretrain_common()
    cfg.model = AutoBridge.from_hf_pretrained({model!r}{revision}).to_megatron_provider(load_weights=False)
{settings}
    return cfg
"""


def recipe_file(tmp_path: Path, model: str, settings: dict | None = None, revision: str | None = None) -> Path:
    lines = "".join(f"    cfg.model.{key} = {value!r}\n" for key, value in (settings or {}).items())
    path = tmp_path / "recipe.py"
    path.write_text(RECIPE.format(model=model, revision=f", revision={revision!r}" if revision else "",
                                  settings=lines.rstrip("\n")))
    return path


def test_llama_fields_from_config_and_bridge(hub, tmp_path, mb06):
    written = write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", LLAMA3_8B)
    cfg = resolve_recipe(recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B"), "model_config", search_paths=[mb06])
    expected = {
        "model.num_layers": 32, "model.hidden_size": 4096, "model.num_attention_heads": 32,
        "model.num_query_groups": 8, "model.ffn_hidden_size": 14336, "model.vocab_size": 128256,
        "model.make_vocab_size_divisible_by": 128, "model.rotary_base": 500000.0, "model.bf16": True,
        "model.position_embedding_type": "rope", "model.share_embeddings_and_output_weights": False,
        # LlamaBridge.provider_bridge sets these after the base conversion
        "model.normalization": "RMSNorm", "model.gated_linear_unit": True, "model.hidden_dropout": 0.0,
        "model.hf_model_id": "meta-llama/Meta-Llama-3-8B",
    }
    for path, value in expected.items():
        assert cfg.value(path) == value, path
    # the config has no head_dim: LlamaConfig.__post_init__ (transformers 5.8.0 and 5.12.1, which
    # Megatron-Bridge 0.6.2 pins; mblint's bundled facts) makes it hidden_size // num_attention_heads
    assert cfg.value("model.kv_channels") == 4096 // 32
    origin = cfg.last_origin("model.num_layers")
    assert Path(origin.path).name == "config.json" and Path(origin.path).resolve() == written.resolve()
    assert origin.line == read_config(written).position("num_hidden_layers")[0]


@pytest.mark.parametrize(("hidden_act", "function"), [
    ("silu", "torch.nn.functional.silu"),
    ("relu2", "megatron.core.activations.squared_relu"),
    ("gelu_pytorch_tanh", "megatron.core.activations.fast_gelu"),
])
def test_activation_from_hidden_act(hub, tmp_path, mb06, hidden_act, function):
    """MegatronModelBridge.hf_to_megatron_activation: ACTIVATION_FUNC_MAP[hidden_act], read from
    megatron/bridge/utils/activation_map.py (Megatron-Core's own module is not at hand here)."""
    write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", {**LLAMA3_8B, "hidden_act": hidden_act})
    cfg = resolve_recipe(recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B"), "model_config", search_paths=[mb06])
    assert cfg.value("model.activation_func") == NamedObject(function)
    assert Path(cfg.last_origin("model.activation_func").path).name == "config.json"


def test_activation_unknown_without_hidden_act_or_for_an_unmapped_one(hub, tmp_path, mb06):
    config = {key: value for key, value in LLAMA3_8B.items() if key != "hidden_act"}
    write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", config)
    cfg = resolve_recipe(recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B"), "model_config", search_paths=[mb06])
    # LlamaConfig's hidden_act defaults to "silu" (bundled facts of transformers 5.8.0 and 5.12.1)
    assert cfg.value("model.activation_func") == NamedObject("torch.nn.functional.silu")
    write_snapshot(hub, "org/own-model-type", {**config, "model_type": "org_llama"})  # no class default known
    cfg = resolve_recipe(recipe_file(tmp_path, "org/own-model-type"), "model_config", search_paths=[mb06])
    assert not is_known(cfg.value("model.activation_func"))
    write_snapshot(hub, "org/unmapped-act", {**LLAMA3_8B, "hidden_act": "no_such_act"})
    cfg = resolve_recipe(recipe_file(tmp_path, "org/unmapped-act"), "model_config", search_paths=[mb06])
    assert not is_known(cfg.value("model.activation_func"))  # Megatron-Bridge raises ValueError


def test_missing_config_leaves_architecture_unknown(hub, tmp_path, mb06):
    cfg = resolve_recipe(recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B"), "model_config", search_paths=[mb06])
    assert not is_known(cfg.value("model.num_layers"))
    assert not is_known(cfg.value("model.num_attention_heads"))


# moonshotai/Moonlight-16B-A3B config.json (model card facts): DeepSeek-V3's architecture.
MOONLIGHT = {
    "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "attention_bias": False,
    "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": 2048, "intermediate_size": 11264,
    "kv_lora_rank": 512, "max_position_embeddings": 8192, "moe_intermediate_size": 1408, "n_group": 1,
    "n_routed_experts": 64, "n_shared_experts": 2, "norm_topk_prob": True, "num_attention_heads": 16,
    "num_experts_per_tok": 6, "num_hidden_layers": 27, "num_key_value_heads": 16, "q_lora_rank": None,
    "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "rms_norm_eps": 1e-05, "rope_scaling": None,
    "rope_theta": 50000.0, "routed_scaling_factor": 2.446, "scoring_func": "sigmoid", "topk_group": 1,
    "topk_method": "noaux_tc", "torch_dtype": "bfloat16", "v_head_dim": 128, "vocab_size": 163840,
}


def test_a_default_the_provider_classes_disagree_on_is_unknown_without_config(hub, tmp_path, mb06):
    """Without config.json the provider class is unknown: GPTModelProvider declares
    deallocate_pipeline_outputs = True, but MLAModelProvider (DeepSeekV3Bridge's, Moonlight's)
    keeps ModelParallelConfig's False (its MLATransformerConfig base comes first in the MRO)."""
    path = recipe_file(tmp_path, "moonshotai/Moonlight-16B-A3B")
    cfg = resolve_recipe(path, "model_config", search_paths=[mb06])
    assert not is_known(cfg.value("model.deallocate_pipeline_outputs"))
    assert cfg.value("model.tensor_model_parallel_size") == 1  # every provider class agrees
    write_snapshot(hub, "moonshotai/Moonlight-16B-A3B", MOONLIGHT)
    cfg = resolve_recipe(path, "model_config", search_paths=[mb06])
    assert cfg.value("model.deallocate_pipeline_outputs") is False


def test_glm45_bridge_code_is_interpreted(hub, tmp_path, mb06):
    write_snapshot(hub, "zai-org/GLM-4.5", GLM45)
    cfg = resolve_recipe(recipe_file(tmp_path, "zai-org/GLM-4.5"), "model_config", search_paths=[mb06])
    assert cfg.value("model.num_layers") == 92
    assert cfg.value("model.num_moe_experts") == 160
    assert cfg.value("model.mtp_num_layers") == 1  # getattr(hf_config, "num_nextn_predict_layers", None)
    assert cfg.value("model.moe_layer_freq") == [0] * 3 + [1] * 89  # [0] * first_k_dense_replace + [1] * ...
    assert cfg.value("model.moe_router_score_function") == "sigmoid"
    assert cfg.value("model.rotary_percent") == 0.5  # ("partial_rotary_factor", "rotary_percent")


def test_pinned_revision_in_recipe(hub, tmp_path, mb06):
    write_snapshot(hub, "Qwen/Qwen3-30B-A3B", dict(QWEN3_30B_A3B, num_experts=64))
    write_snapshot(hub, "Qwen/Qwen3-30B-A3B", QWEN3_30B_A3B, commit=PINNED, ref=None)
    path = recipe_file(tmp_path, "Qwen/Qwen3-30B-A3B", revision=PINNED)
    cfg = resolve_recipe(path, "model_config", search_paths=[mb06])
    assert cfg.value("model.num_moe_experts") == 128
    assert cfg.value("model.hf_model_revision") == PINNED
    assert cfg.value("model.moe_router_pre_softmax") is False  # not hf_config.norm_topk_prob


# ----- the checks that need the architecture -------------------------------------------------


def lint(tmp_path: Path, path: Path, rule_id: str, mb06: Path, world_size: int = 1024) -> list:
    from mblint.engine import CheckOptions, Engine
    from mblint.plugins import LoadedPlugins
    from rules import mblint_rules

    rule = next(r for r in mblint_rules() if r.id == rule_id)
    engine = Engine(CheckOptions(select=(rule_id,), world_size=world_size, search_paths=(mb06,), jobs=1),
                    LoadedPlugins(rules=[rule]))
    engine.display_root = tmp_path
    report = engine.check_paths([str(path)])
    return [f for f in report.findings if f.rule_id == rule_id]


@pytest.mark.parametrize(("pp", "fires"), [(8, True), (4, False), (23, False), (46, False)])
def test_layers_not_divisible_by_pp(hub, tmp_path, mb06, pp, fires):
    """GLM-4.5's 92 layers with PP 8: Megatron-Bridge's own recipe shipped this (fixed upstream)."""
    write_snapshot(hub, "zai-org/GLM-4.5", GLM45)
    path = recipe_file(tmp_path, "zai-org/GLM-4.5", {"pipeline_model_parallel_size": pp})
    findings = lint(tmp_path, path, "PB005", mb06)
    assert bool(findings) == fires
    if fires:
        finding = findings[0]
        assert "num_layers 92" in finding.message and finding.severity.name == "ERROR"
        assert (Path(finding.location.path).name, finding.location.line) == ("recipe.py", 8)  # the PP line
        assert any(Path(r.origin.path).name == "config.json" and "92" in r.message for r in finding.related)


@pytest.mark.parametrize(("tp", "fires"), [(12, True), (3, True), (8, False), (4, False), (16, False)])
def test_heads_and_groups_vs_tp(hub, tmp_path, mb06, tp, fires):
    """Llama 3 8B: 32 heads (TP 12 and 3 fail); its 8 query groups divide TP 16 (allowed)."""
    write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", LLAMA3_8B)
    path = recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B", {"tensor_model_parallel_size": tp})
    findings = lint(tmp_path, path, "PB007", mb06)
    assert bool(findings) == fires
    if findings:
        assert findings[0].location.line == 8


@pytest.mark.parametrize(("ep", "fires"), [(3, True), (48, True), (8, False), (128, False)])
def test_experts_vs_ep(hub, tmp_path, mb06, ep, fires):
    write_snapshot(hub, "Qwen/Qwen3-30B-A3B", QWEN3_30B_A3B)
    path = recipe_file(tmp_path, "Qwen/Qwen3-30B-A3B", {"expert_model_parallel_size": ep})
    findings = lint(tmp_path, path, "MO009", mb06)
    assert bool(findings) == fires


def test_ep_on_a_dense_model_from_the_transformers_defaults(hub, tmp_path, mb06):
    """Llama's config.json has no expert count; LlamaConfig declares none (the bundled facts of
    the transformers 0.6.2 pins), so num_moe_experts is None and Megatron-Core rejects EP 2."""
    write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", LLAMA3_8B)
    path = recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B", {"expert_model_parallel_size": 2})
    assert [f.rule_id for f in lint(tmp_path, path, "MO009", mb06)] == ["MO009"]
    write_snapshot(hub, "org/own-model-type", {**LLAMA3_8B, "model_type": "org_llama"})
    path = recipe_file(tmp_path, "org/own-model-type", {"expert_model_parallel_size": 2})
    assert lint(tmp_path, path, "MO009", mb06) == []  # a model type no facts know: unknown


def test_keys_of_unknown_default_are_a_finding_at_the_call(hub, tmp_path, mb06):
    """A config.json read whose model_type no transformers facts know: CV002 names the provider
    fields left unknown and why, at the from_hf_pretrained call."""
    write_snapshot(hub, "org/own-model-type", {**LLAMA3_8B, "model_type": "org_llama"})
    report = _check_all_rules([recipe_file(tmp_path, "org/own-model-type")], mb06)
    found = [f for f in report.findings if f.rule_id == "CV002"]
    assert len(found) == 1 and (found[0].location.line, found[0].location.column) == (7, 17)
    assert "model.num_moe_experts (num_experts)" in found[0].message
    assert "model_type 'org_llama'" in found[0].message
    write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", LLAMA3_8B)
    report = _check_all_rules([recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B")], mb06)
    assert not [f for f in report.findings if f.rule_id == "CV002"]


def test_checks_silent_without_config(hub, tmp_path, mb06):
    path = recipe_file(tmp_path, "zai-org/GLM-4.5", {"pipeline_model_parallel_size": 8})
    assert lint(tmp_path, path, "PB005", mb06) == []


def _check_all_rules(paths: list[Path], mb06: Path):
    from mblint.engine import CheckOptions, Engine
    from mblint.plugins import LoadedPlugins
    from rules import mblint_rules

    return Engine(CheckOptions(search_paths=(mb06,), jobs=1), LoadedPlugins(rules=mblint_rules())).check_paths(
        [str(path) for path in paths])


def test_missing_config_is_a_finding_at_the_call_once_per_place(hub, tmp_path, mb06):
    """A config.json not at hand is a CV002 finding (in every format, not a stderr note) at the
    from_hf_pretrained call, naming the model; two recipes reaching one call give one finding,
    and the summary counts both jobs as not fully checked."""
    from mblint.report.text import summary_line

    first = recipe_file(tmp_path, "zai-org/GLM-4.5", {"pipeline_model_parallel_size": 8})
    first.write_text(first.read_text() + "\n\ndef other_config():\n    return model_config()\n")
    report = _check_all_rules([first], mb06)
    missing = [f for f in report.findings if f.rule_id == "CV002"]
    assert len(missing) == 1 and (missing[0].location.line, missing[0].location.column) == (7, 17)
    assert "zai-org/GLM-4.5" in missing[0].message and "did not run" in missing[0].message
    assert not [note for note in report.notes if "config.json" in note]
    assert "2 jobs not fully checked (CV002 model-config-not-found: 2" in summary_line(report)
    write_snapshot(hub, "zai-org/GLM-4.5", GLM45)
    report = _check_all_rules([first], mb06)
    assert not [f for f in report.findings if f.rule_id == "CV002"]
    assert "CV002" not in summary_line(report)
    assert [f.rule_id for f in report.findings].count("PB005") == 1


def test_settings_folder_of_configs(hub, tmp_path, mb06):
    (tmp_path / "hf-configs" / "zai-org" / "GLM-4.5").mkdir(parents=True)
    (tmp_path / "hf-configs" / "zai-org" / "GLM-4.5" / "config.json").write_text(json.dumps(GLM45))
    (tmp_path / "mblint.toml").write_text('hf-config-paths = ["hf-configs"]\n')
    path = recipe_file(tmp_path, "zai-org/GLM-4.5", {"pipeline_model_parallel_size": 8})
    from mblint.engine import CheckOptions, Engine
    from mblint.plugins import LoadedPlugins
    from mblint.settings import SettingsResolver
    from rules import mblint_rules

    rule = next(r for r in mblint_rules() if r.id == "PB005")
    options = CheckOptions(select=("PB005",), search_paths=(mb06,), jobs=1, settings=SettingsResolver())
    report = Engine(options, LoadedPlugins(rules=[rule])).check_paths([str(path)])
    assert [f.rule_id for f in report.findings] == ["PB005"]


# ----- keys the config.json leaves out: the transformers config class at hand ---------------

PRETRAINED_CONFIG = '''
class PushToHubMixin:
    def push_to_hub(self):
        pass


class PreTrainedConfig(PushToHubMixin):
    model_type = ""
    attribute_map = {}
    tie_word_embeddings: bool = True
    dtype: str | None = None

    def __getattribute__(self, key):
        return super().__getattribute__(key)
'''

# The shape of transformers 5's LlamaConfig (annotated defaults, head_dim computed when None).
LLAMA_CONFIG = '''
from ...configuration_utils import PreTrainedConfig


class LlamaConfig(PreTrainedConfig):
    model_type = "llama"
    vocab_size: int = 32000
    num_hidden_layers: int = 32
    attention_bias: bool = False
    mlp_bias: bool = False
    head_dim: int | None = None
    rope_parameters: dict | None = None

    def __post_init__(self, **kwargs):
        if self.head_dim is None:
            self.head_dim = self.hidden_size // self.num_attention_heads
'''


def fake_transformers(root: Path) -> Path:
    package = root / "transformers"
    (package / "models" / "llama").mkdir(parents=True)
    for folder in (package, package / "models", package / "models" / "llama"):
        (folder / "__init__.py").write_text("")
    (package / "configuration_utils.py").write_text(PRETRAINED_CONFIG)
    (package / "models" / "llama" / "configuration_llama.py").write_text(LLAMA_CONFIG)
    return root


def test_missing_keys_take_the_config_class_defaults(hub, tmp_path, mb06):
    config = {key: value for key, value in LLAMA3_8B.items() if key != "rope_scaling"}
    write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", config)
    path = recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B")
    bundled = resolve_recipe(path, "model_config", search_paths=[mb06])
    # no transformers source: the bundled facts of the transformers 0.6.2 pins (LlamaConfig)
    assert bundled.value("model.add_bias_linear") is False  # mlp_bias: bool = False
    assert bundled.value("model.num_moe_experts") is None  # no expert count in LlamaConfig
    assert bundled.value("model.position_embedding_type") == "rope"  # rope_parameters = None
    assert bundled.value("model.kv_channels") == 128
    assert not bundled.gaps
    roots = [mb06, fake_transformers(tmp_path / "site")]
    cfg = resolve_recipe(path, "model_config", search_paths=roots)
    assert cfg.value("model.add_bias_linear") is False  # LlamaConfig.mlp_bias = False
    assert cfg.value("model.num_moe_experts") is None  # no class of the chain has num_experts: not mapped
    # head_dim: None, then LlamaConfig.__post_init__: hidden_size // num_attention_heads = 4096 // 32
    assert cfg.value("model.kv_channels") == 128
    assert Path(cfg.last_origin("model.kv_channels").path).name == "configuration_llama.py"
    assert cfg.value("model.position_embedding_type") == "rope"  # rope_parameters defaults to None
    origin = cfg.last_origin("model.add_bias_linear")
    assert Path(origin.path).name == "configuration_llama.py"
    write_snapshot(hub, "org/own-model-type", {**config, "model_type": "org_llama"})
    without = resolve_recipe(recipe_file(tmp_path, "org/own-model-type"), "model_config", search_paths=[mb06])
    assert not is_known(without.value("model.add_bias_linear"))  # ("mlp_bias", "add_bias_linear"): maybe a default
    assert not is_known(without.value("model.num_moe_experts"))
    assert not is_known(without.value("model.position_embedding_type"))  # the class may default to YaRN
    gap = next(gap for gap in without.gaps if gap.kind == MODEL_CONFIG_INCOMPLETE)
    assert gap.subject == "org/own-model-type" and "model.num_moe_experts (num_experts)" in gap.part
    assert "model_type 'org_llama'" in gap.source


# A config class whose __post_init__ computes two attributes: one a base method also assigns
# (so what __post_init__ gives is not the last word), one only it assigns.
BASE_CONFIG_TOUCHING_GROUPS = PRETRAINED_CONFIG + '''
    def normalise(self):
        self.num_key_value_heads = 1
'''
LLAMA_CONFIG_TWO_COMPUTED = LLAMA_CONFIG + '''
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads
'''


def test_post_init_takes_config_values_and_leaves_what_a_base_may_change(hub, tmp_path, mb06):
    site = fake_transformers(tmp_path / "site")
    (site / "transformers" / "configuration_utils.py").write_text(BASE_CONFIG_TOUCHING_GROUPS)
    (site / "transformers" / "models" / "llama" / "configuration_llama.py").write_text(LLAMA_CONFIG_TWO_COMPUTED)
    write_snapshot(hub, "org/explicit-head-dim", {**LLAMA3_8B, "head_dim": 96})
    cfg = resolve_recipe(recipe_file(tmp_path, "org/explicit-head-dim"), "model_config", search_paths=[mb06, site])
    assert cfg.value("model.kv_channels") == 96  # config.json's head_dim is not None: kept
    assert Path(cfg.last_origin("model.kv_channels").path).name == "config.json"
    assert cfg.value("model.num_query_groups") == 8  # a base method assigns it: config.json's value, as before
    without_groups = {key: value for key, value in LLAMA3_8B.items() if key != "num_key_value_heads"}
    write_snapshot(hub, "org/no-groups", without_groups)
    cfg = resolve_recipe(recipe_file(tmp_path, "org/no-groups"), "model_config", search_paths=[mb06, site])
    assert cfg.value("model.kv_channels") == 128
    assert not is_known(cfg.value("model.num_query_groups"))


# ----- a composite (vision-language) config: the bridge converts hf_config.text_config --------

# Qwen/Qwen2.5-VL-3B-Instruct config.json (model card facts): a hub config saved flat, the text
# model's keys at the top level.
QWEN25_VL_3B = {
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "model_type": "qwen2_5_vl",
    "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645, "hidden_act": "silu",
    "hidden_size": 2048, "intermediate_size": 11008, "max_position_embeddings": 128000, "max_window_layers": 70,
    "num_attention_heads": 16, "num_hidden_layers": 36, "num_key_value_heads": 2, "rms_norm_eps": 1e-06,
    "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
    "use_sliding_window": False, "vision_config": {"depth": 32, "hidden_size": 1280, "out_hidden_size": 2048},
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "vocab_size": 151936,
}

# The shape of transformers 5's Qwen2.5-VL configs: the composite class names its text class in
# sub_configs and, for a flat hub config, builds it from the top-level keys that are its fields.
QWEN25_VL_CONFIG = '''
import inspect

from ...configuration_utils import PreTrainedConfig


class Qwen2_5_VLTextConfig(PreTrainedConfig):
    model_type = "qwen2_5_vl_text"
    vocab_size: int = 152064
    hidden_size: int = 8192
    intermediate_size: int = 29568
    num_hidden_layers: int = 80
    num_attention_heads: int = 64
    num_key_value_heads: int | None = 8
    hidden_act: str = "silu"
    max_position_embeddings: int = 32768
    rms_norm_eps: float = 1e-05
    attention_dropout: float = 0.0
    rope_parameters: dict | None = None

    def __post_init__(self, **kwargs):
        if self.num_key_value_heads is None:
            self.num_key_value_heads = self.num_attention_heads


class Qwen2_5_VLConfig(PreTrainedConfig):
    model_type = "qwen2_5_vl"
    sub_configs = {"text_config": Qwen2_5_VLTextConfig}
    text_config: dict | PreTrainedConfig | None = None
    vision_config: dict | None = None
    tie_word_embeddings: bool = False

    def __post_init__(self, **kwargs):
        text_params = inspect.signature(self.sub_configs["text_config"].__init__).parameters.keys()
        text_params = list(text_params) + ["rope_parameters", "rope_scaling", "rope_theta"]
        text_kwargs = {key: kwargs.pop(key) for key in text_params if key in kwargs}
        if isinstance(self.text_config, dict):
            self.text_config = self.sub_configs["text_config"](**self.text_config)
        elif self.text_config is None:
            text_kwargs["dtype"] = kwargs.get("torch_dtype", kwargs.get("dtype"))
            self.text_config = self.sub_configs["text_config"](**text_kwargs)
'''


def fake_qwen25_vl(root: Path, config_source: str = QWEN25_VL_CONFIG) -> Path:
    site = fake_transformers(root)
    folder = site / "transformers" / "models" / "qwen2_5_vl"
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "configuration_qwen2_5_vl.py").write_text(config_source)
    return site


QWEN25_VL_TEXT = {
    "model.num_layers": 36, "model.hidden_size": 2048, "model.num_attention_heads": 16,
    "model.num_query_groups": 2, "model.ffn_hidden_size": 11008, "model.vocab_size": 151936,
    "model.bf16": True, "model.rotary_base": 1000000.0, "model.layernorm_epsilon": 1e-06,
}


def test_text_config_of_a_flat_composite_config(hub, tmp_path, mb06):
    written = write_snapshot(hub, "Qwen/Qwen2.5-VL-3B-Instruct", QWEN25_VL_3B)
    path = recipe_file(tmp_path, "Qwen/Qwen2.5-VL-3B-Instruct")
    bundled = resolve_recipe(path, "model_config", search_paths=[mb06])
    for field, value in QWEN25_VL_TEXT.items():  # the bundled facts of Qwen2_5_VLConfig (transformers 5.8.0, 5.12.1)
        assert bundled.value(field) == value, field
    cfg = resolve_recipe(path, "model_config", search_paths=[mb06, fake_qwen25_vl(tmp_path / "site")])
    for field, value in QWEN25_VL_TEXT.items():
        assert cfg.value(field) == value, field
    # set by Qwen25VLBridge.provider_bridge from the top-level config
    assert cfg.value("model.share_embeddings_and_output_weights") is True
    assert cfg.value("model.position_embedding_type") == "mrope"
    origin = cfg.last_origin("model.num_layers")
    assert Path(origin.path).resolve() == written.resolve()
    assert origin.line == read_config(written).position("num_hidden_layers")[0]


def test_text_config_object_in_config_json(hub, tmp_path, mb06):
    text = {key: QWEN25_VL_3B[key] for key in ("hidden_size", "intermediate_size", "num_attention_heads",
                                              "num_hidden_layers", "num_key_value_heads", "rms_norm_eps",
                                              "rope_theta", "vocab_size")}
    nested = {key: value for key, value in QWEN25_VL_3B.items() if key not in text}
    write_snapshot(hub, "org/nested-vl", {**nested, "text_config": {**text, "dtype": "bfloat16"}})
    cfg = resolve_recipe(recipe_file(tmp_path, "org/nested-vl"), "model_config",
                         search_paths=[mb06, fake_qwen25_vl(tmp_path / "site")])
    for field, value in QWEN25_VL_TEXT.items():
        assert cfg.value(field) == value, field


def test_text_config_unknown_when_the_class_does_not_build_it_from_flat_keys(hub, tmp_path, mb06):
    write_snapshot(hub, "Qwen/Qwen2.5-VL-3B-Instruct", QWEN25_VL_3B)
    defaults_only = QWEN25_VL_CONFIG.split("    def __post_init__(self, **kwargs):\n        text_params")[0] + \
        "    def __post_init__(self, **kwargs):\n        self.text_config = self.sub_configs['text_config']()\n"
    site = fake_qwen25_vl(tmp_path / "site", defaults_only)
    cfg = resolve_recipe(recipe_file(tmp_path, "Qwen/Qwen2.5-VL-3B-Instruct"), "model_config", search_paths=[mb06, site])
    assert not is_known(cfg.value("model.num_layers"))


@pytest.mark.parametrize(("layout", "fires"), [
    ("Et*23|t*23|t*23|t*23mL", ""),  # GLM-4.5: 92 decoder layers and its one MTP layer
    ("Et*23|t*23|t*23|t*22mL", "places 91 decoder layers, but model.num_layers is 92"),
    ("Et*23|t*23|t*23|t*23L", "places 0 MTP layers, but model.mtp_num_layers is 1"),
])
def test_layout_layer_counts_against_the_config(hub, tmp_path, mb06, layout, fires):
    """PB014 with the layer counts from config.json (num_hidden_layers, num_nextn_predict_layers)."""
    write_snapshot(hub, "zai-org/GLM-4.5", GLM45)
    path = recipe_file(tmp_path, "zai-org/GLM-4.5",
                       {"pipeline_model_parallel_size": 4, "pipeline_model_parallel_layout": layout})
    findings = lint(tmp_path, path, "PB014", mb06)
    assert [f.message for f in findings if fires in f.message] == [f.message for f in findings]
    assert bool(findings) == bool(fires)
    if fires:
        assert findings[0].severity.name == "ERROR"
        assert (Path(findings[0].location.path).name, findings[0].location.line) == ("recipe.py", 9)  # the layout
        if "decoder" in fires:  # num_layers is num_hidden_layers; GLM's bridge sets mtp_num_layers in its own code
            assert any(Path(r.origin.path).name == "config.json" for r in findings[0].related)


def test_layout_layer_counts_silent_without_config(hub, tmp_path, mb06):
    path = recipe_file(tmp_path, "zai-org/GLM-4.5",
                       {"pipeline_model_parallel_size": 4, "pipeline_model_parallel_layout": "Et|tL"})
    assert lint(tmp_path, path, "PB014", mb06) == []


def test_a_config_json_still_absent_keeps_the_cached_result(hub, tmp_path, mb06):
    """The recipe depends on refs/main, which does not exist: a second run with nothing changed
    is served from the cache; once the config arrives, the recipe is checked again with it."""
    from mblint.engine import CheckOptions, Engine
    from mblint.plugins import LoadedPlugins
    from rules import mblint_rules

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    path = recipe_file(tmp_path, "zai-org/GLM-4.5", {"pipeline_model_parallel_size": 8})
    rule = next(r for r in mblint_rules() if r.id == "PB005")

    def run():
        options = CheckOptions(select=("PB005",), search_paths=(mb06,), jobs=1, use_cache=True,
                               cache_root=tmp_path)
        return Engine(options, LoadedPlugins(rules=[rule])).check_paths([str(path)])

    assert run().cache_hits == 0
    second = run()
    assert second.cache_hits == 1 and second.findings == []
    write_snapshot(hub, "zai-org/GLM-4.5", GLM45)
    third = run()
    assert third.cache_hits == 0 and [f.rule_id for f in third.findings] == ["PB005"]


# ----- a bridge that converts the config itself (Megatron-Bridge after 0.6) -------------------

# Megatron-Bridge main's LlamaBridge: no provider_bridge of its own; it overrides
# hf_config_to_provider_kwargs, which the base provider_bridge calls
# (models/llama/llama_bridge.py, models/conversion/model_bridge.py provider_bridge).
OVERRIDING_LLAMA_BRIDGE = '''
from megatron.core.models.gpt.gpt_model import GPTModel
from transformers import LlamaForCausalLM

from megatron.bridge.models.conversion.model_bridge import MegatronModelBridge


@MegatronModelBridge.register_bridge(source=LlamaForCausalLM, target=GPTModel, model_type="llama")
class LlamaBridge(MegatronModelBridge):
    def hf_config_to_model_config_kwargs(self, hf_config):
        config_kwargs = super().hf_config_to_provider_kwargs(hf_config)
        config_kwargs.update(normalization="RMSNorm", gated_linear_unit=True, rope_scaling=False)
        rope_scaling = getattr(hf_config, "rope_scaling", None) or {}
        if rope_scaling.get("rope_type") == "llama3":
            config_kwargs["rope_scaling"] = True
        return config_kwargs

    def hf_config_to_provider_kwargs(self, hf_config):
        return self.hf_config_to_model_config_kwargs(hf_config)
'''
# A bridge whose field filter mblint does not follow: the generic conversion is unknown.
FILTERING_LLAMA_BRIDGE = OVERRIDING_LLAMA_BRIDGE.replace(
    "    def hf_config_to_provider_kwargs(self, hf_config):\n        return self.hf_config_to_model_config_kwargs(hf_config)\n",
    "    def _should_map_hf_config_field(self, hf_config, hf_name, megatron_name, value):\n"
    "        return hf_name != 'head_dim'\n")


@pytest.fixture(scope="module")
def mb_with_bridge(tmp_path_factory, mb06):
    """A copy of the 0.6.2 tree whose Llama bridge is replaced by ``source``."""
    import shutil

    def make(name: str, source: str) -> Path:
        root = tmp_path_factory.mktemp(name)
        shutil.copytree(mb06 / "megatron", root / "megatron")
        (root / "megatron" / "bridge" / "models" / "llama" / "llama_bridge.py").write_text(source)
        return root
    return {"overriding": make("overriding", OVERRIDING_LLAMA_BRIDGE),
            "filtering": make("filtering", FILTERING_LLAMA_BRIDGE)}


def test_a_bridge_converting_the_config_itself_is_followed(hub, tmp_path, mb_with_bridge):
    write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", LLAMA3_8B)
    cfg = resolve_recipe(recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B"), "model_config",
                         search_paths=[mb_with_bridge["overriding"]])
    assert cfg.value("model.num_layers") == 32
    assert cfg.value("model.num_attention_heads") == 32
    assert Path(cfg.last_origin("model.num_layers").path).name == "config.json"
    assert cfg.value("model.normalization") == "RMSNorm"  # the override's own update
    assert cfg.value("model.rope_scaling") is False


def test_a_conversion_mblint_cannot_follow_leaves_the_architecture_unknown(hub, tmp_path, mb_with_bridge):
    """Not the provider class's defaults (num_layers 0, hidden_size 0): PB005 said "num_layers
    0 + 2 is not divisible by PP 16" on Megatron-Bridge main's Llama 3.1 405B recipes."""
    write_snapshot(hub, "meta-llama/Meta-Llama-3-8B", LLAMA3_8B)
    path = recipe_file(tmp_path, "meta-llama/Meta-Llama-3-8B", {"pipeline_model_parallel_size": 16})
    root = mb_with_bridge["filtering"]
    cfg = resolve_recipe(path, "model_config", search_paths=[root])
    for field in ("model.num_layers", "model.hidden_size", "model.num_attention_heads"):
        assert not is_known(cfg.value(field)), field
    assert lint(tmp_path, path, "PB005", root) == []


def test_a_finding_on_fields_from_the_config_lands_on_the_autobridge_line(hub, tmp_path, mb06):
    """MO017 on Qwen3-30B-A3B's 128 experts (config.json) with the router dtype left to the
    provider class (its bridge sets none): the recipe line that builds the model, not the
    ``def`` line (issue 33 section 4)."""
    write_snapshot(hub, "Qwen/Qwen3-30B-A3B", QWEN3_30B_A3B)
    path = recipe_file(tmp_path, "Qwen/Qwen3-30B-A3B")
    [finding] = lint(tmp_path, path, "MO017", mb06)
    assert (Path(finding.location.path).name, finding.location.line) == ("recipe.py", 7)  # cfg.model = AutoBridge...
