"""Issue 24: findings that were false or noise on the shipped recipes, and severities that
depend on the release, checked with every rule enabled on fixtures modelled on the real
recipe patterns (the rules' own examples cover each rule alone)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from mblint.api import resolve_recipe
from mblint.engine import CheckOptions, Engine
from mblint.model import is_known
from mblint.plugins import load_plugins
from mblint.testing import HEADER_03, HEADER_06

MOE_HF = "cfg.model = AutoBridge.from_hf_pretrained('Qwen/Qwen3-30B-A3B').to_megatron_provider(load_weights=False)\n"


def lint(tmp_path: Path, body: str, mb_root: Path, version: str = "0.6",
         function: str = "example_config") -> list:
    header = HEADER_03 if version == "0.3" else HEADER_06
    source = f"{header}\n\ndef {function}():\n{textwrap.indent(textwrap.dedent(body).strip(), '    ')}\n    return cfg\n"
    recipe = tmp_path / "recipe.py"
    recipe.write_text(source, encoding="utf-8")
    engine = Engine(CheckOptions(version=version, search_paths=(mb_root,), jobs=1))
    report = engine.check_paths([str(recipe)])
    assert report.errors == []
    return report.findings


def test_packed_mtp_fine_tuning_is_not_reported(tmp_path, mb_roots):
    """Megatron-Core 0.16.1 and 0.19.2 roll MTP targets within packed-sequence boundaries
    (the retired PK011's premise was false); the DeepSeek/Qwen packed MTP SFT pattern."""
    body = "cfg = _sft_common()\n" + MOE_HF + "cfg.model.mtp_num_layers = 1\ncfg.dataset.enable_offline_packing = True"
    findings = lint(tmp_path, body, mb_roots["0.6"])
    assert not [f for f in findings if "multi-token prediction" in f.message or "mtp" in f.message.lower()]


def test_hybridep_without_the_nvlink_domain_variable_is_not_reported(tmp_path, mb_roots):
    """NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN is an override DeepEP reads; Megatron-Bridge
    0.6.2 and Megatron-Core 0.19.2 never do (the retired MO016)."""
    body = ("cfg = _pretrain_common()\n" + MOE_HF + "cfg.model.moe_token_dispatcher_type = 'flex'\n"
            "cfg.model.moe_flex_dispatcher_backend = 'hybridep'\ncfg.model.expert_model_parallel_size = 8\n"
            "cfg.env_vars = {'CUDA_DEVICE_MAX_CONNECTIONS': 32}")
    findings = lint(tmp_path, body, mb_roots["0.6"])
    assert not [f for f in findings if "NVLINK" in f.message]


def test_retired_rules_are_gone():
    ids = {rule.id for rule in load_plugins().rules}
    assert not {"PK011", "MO016"} & ids


@pytest.mark.parametrize("version,severity", [("0.6", "INFO"), ("0.3", "ERROR")])
def test_sequence_parallel_without_tp_depends_on_the_release(tmp_path, mb_roots, version, severity):
    """0.6 turns SP off when TP is 1 (info); 0.3's finalize() lets Megatron-Core 0.16.1 raise
    (the 0.3.1 GLM-4.5 Air pretrain recipe's pattern)."""
    body = ("cfg = _pretrain_common()\n" + MOE_HF + "cfg.model.tensor_model_parallel_size = 1\n"
            "cfg.model.sequence_parallel = True")
    found = [f for f in lint(tmp_path, body, mb_roots[version], version) if f.rule_id == "PB008"]
    assert [f.severity.name for f in found] == [severity]


def test_one_problem_one_finding_for_a_name_too_small_for_the_layout(tmp_path, mb_roots):
    """DeepSeek-V3's 64-GPU perf recipe keeps its 1024-GPU layout (PP 8, EP 64): PB011 says
    so; PB002 (world not divisible by the expert grid) does not repeat it."""
    body = ("cfg = _pretrain_common()\n" + MOE_HF + "cfg.model.tensor_model_parallel_size = 2\n"
            "cfg.model.pipeline_model_parallel_size = 8\ncfg.model.expert_model_parallel_size = 64")
    found = lint(tmp_path, body, mb_roots["0.6"], function="deepseek_v3_pretrain_64gpu_h100_bf16_config")
    assert sorted(f.rule_id for f in found if f.rule_id.startswith("PB0") and f.rule_id != "PB010") == ["PB011"]


def test_statements_after_return_cfg_are_reported_once(tmp_path, mb_roots):
    """The shipped Llama 3.1 8B pretrain recipe sets its mixed precision after `return cfg`
    (0.3.1 and 0.6.2): SY006 on that line, and the setting is not in the configuration."""
    body = ("cfg = _pretrain_common()\ncfg.mixed_precision = 'bf16_mixed'\nif cfg.train.micro_batch_size > 8:\n"
            "    raise ValueError('too big')\n    cfg.train.micro_batch_size = 8\n"
            "return cfg\n\ncfg.mixed_precision = bf16_mixed()\ncfg.train.micro_batch_size = 2")
    for version in ("0.3", "0.6"):
        findings = lint(tmp_path, body, mb_roots[version], version)
        source = (tmp_path / "recipe.py").read_text().splitlines()
        lines = sorted(source[f.location.line - 1].strip() for f in findings if f.rule_id == "SY006")
        assert lines == ["cfg.mixed_precision = bf16_mixed()", "cfg.train.micro_batch_size = 8"], lines


@pytest.mark.parametrize("version", ["0.3", "0.6"])
def test_constructor_normalisations_are_in_the_resolved_values(tmp_path, mb_roots, version):
    """MixedPrecisionConfig keeps fp8_param equal to fp8_param_gather (its __setattr__, also
    during __init__); 0.6's TokenizerConfig.__post_init__ sets pad_vocab_size = False."""
    from mblint.resolve import resolve

    body = ("cfg = _pretrain_common()\ncfg.mixed_precision = MixedPrecisionConfig(bf16=True, fp8_param=False, "
            "fp8_param_gather=True)\nmp = bf16_mixed()\nmp.fp8_param = True\ncfg.optimizer.params_dtype = mp.fp8_param_gather")
    header = (HEADER_03 if version == "0.3" else HEADER_06) + "from megatron.bridge.training.mixed_precision import MixedPrecisionConfig\n"
    recipe = tmp_path / "recipe.py"
    recipe.write_text(f"{header}\n\ndef example_config():\n{textwrap.indent(body, '    ')}\n    return cfg\n")
    cfg = resolve(recipe, "example_config", search_paths=[mb_roots[version]], version=version,
                  override_files=[], dotlist=[])
    assert cfg.value("mixed_precision.fp8_param") is True
    assert cfg.value("optimizer.params_dtype") is True  # set through fp8_param, read through fp8_param_gather
    if version == "0.6":
        assert cfg.value("tokenizer.pad_vocab_size") is False


QWEN3_VL_235B_SFT = """\
cfg = _sft_common_vlm()
cfg.model = AutoBridge.from_hf_pretrained("Qwen/Qwen3-VL-235B-A22B-Instruct").to_megatron_provider(load_weights=False)
cfg.model.seq_length = 4096
cfg.model.tensor_model_parallel_size = 4
cfg.model.pipeline_model_parallel_size = 1
cfg.model.expert_model_parallel_size = 32
cfg.model.context_parallel_size = 1
cfg.model.sequence_parallel = False
"""


@pytest.mark.parametrize("version", ["0.3", "0.6"])
def test_tp_without_sp_is_silent_when_the_autobridge_class_is_unknown(tmp_path, mb_roots, version):
    """0.6.2's qwen3_vl_235b_a22b_sft_32gpu_h100_bf16_config without its config.json: the
    provider may be Qwen3VLMoEModelProvider, whose finalize() turns SP on with TP > 1, so SP is
    unknown and PB010 (and every rule reading SP) says nothing."""
    body = QWEN3_VL_235B_SFT if version == "0.6" else QWEN3_VL_235B_SFT.replace("_sft_common_vlm()", "_sft_common()")
    function = "qwen3_vl_235b_a22b_sft_32gpu_h100_bf16_config"
    findings = lint(tmp_path, body, mb_roots[version], version, function=function)
    assert [f.rule_id for f in findings if "sequence_parallel" in f.message] == []
    cfg = resolve_recipe(tmp_path / "recipe.py", function, search_paths=[mb_roots[version]], version=version)
    assert cfg.value("model.tensor_model_parallel_size") == 4
    assert not is_known(cfg.value("model.sequence_parallel"))


def test_tp_without_sp_is_reported_for_a_provider_class_mblint_knows(tmp_path, mb_roots):
    body = QWEN3_VL_235B_SFT.replace(
        'AutoBridge.from_hf_pretrained("Qwen/Qwen3-VL-235B-A22B-Instruct").to_megatron_provider(load_weights=False)',
        "GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)")
    body = "from megatron.bridge.models import GPTModelProvider\n" + body
    findings = lint(tmp_path, body, mb_roots["0.6"], function="gpt_sft_32gpu_h100_bf16_config")
    assert [f.rule_id for f in findings if f.rule_id == "PB010"] == ["PB010"]
