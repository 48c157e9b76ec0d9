"""A rule whose truth changed between releases reads it from the schema derived from the source
at hand, not from a version number: here a copy of Megatron-Bridge 0.6.2 made into a later
release by the changes the rules depend on."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mblint.engine import CheckOptions, Engine

# Megatron-Bridge main's EnergonDatasetConfig.validate() (data/builders/energon.py:203-204):
# native packing (packing_buffer_size) is supported, by the Qwen-VL task encoder only.
NATIVE_PACKING_CHECK = '''        if self.packing_buffer_size is not None and not isinstance(self.task_encoder, QwenVLEnergonTaskEncoderConfig):
            raise ValueError("Energon native sequence packing currently supports only QwenVLEnergonTaskEncoderConfig.")
'''
ENERGON_RECIPE = '''from megatron.bridge.data.builders import EnergonDatasetConfig
from megatron.bridge.data.builders.energon import HFEnergonTaskEncoderConfig, QwenVLEnergonTaskEncoderConfig
from megatron.bridge.recipes.common import _sft_common_vlm


def energon_config():
    cfg = _sft_common_vlm()
    cfg.dataset = EnergonDatasetConfig(path="/data/x", seq_length=4096, micro_batch_size=1,
        task_encoder={encoder}(hf_processor_path="Qwen/Qwen3-VL-8B-Instruct"))
    cfg.dataset.packing_buffer_size = 16
    return cfg
'''


# The later release's validate_flex_dispatcher_backend accepts DeepEP on every Blackwell GPU
# (0.6.2 training/flex_dispatcher_backend.py:107-109 accepts compute capability 8 or 9, or a
# device name starting "NVIDIA B200"/"NVIDIA B300").
DEEPEP_ON_BLACKWELL = ('device_properties.major in (8, 9) or device_properties.name.startswith(("NVIDIA B200", "NVIDIA B300"))',
                       "device_properties.major in (8, 9, 10)")
# Like Megatron-Bridge main (PR 5740, training/flex_dispatcher_backend.py:90-93), its validate()
# turns a flex dispatcher without a backend to alltoall instead of leaving it to fail at model build.
FLEX_WITHOUT_BACKEND_FALLS_BACK = (
    '    if model_config.moe_token_dispatcher_type == "flex":\n',
    '    if model_config.moe_token_dispatcher_type == "flex":\n'
    '        if model_config.moe_flex_dispatcher_backend is None:\n'
    '            _fallback_to_alltoall(model_config)\n'
    '            return\n')
# Its packed dataset's collate pads a pack to a multiple of 8, not 16 (0.6.2 data/datasets/gpt_sft.py:98).
COLLATE_PADS_TO_8 = ("pad_seq_length_to_mult: int = 16,", "pad_seq_length_to_mult: int = 8,")
MOE_RECIPE = '''from megatron.bridge.models import GPTModelProvider
from megatron.bridge.recipes.common import _pretrain_common


def moe_pretrain_8gpu_gb200_bf16_config():
    cfg = _pretrain_common()
    cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=64)
    cfg.model.moe_token_dispatcher_type = "flex"
    cfg.model.moe_flex_dispatcher_backend = "deepep"
    return cfg
'''
# Offline packing, sequence parallelism over TP 16 and packs not padded to the full width: each
# pack's width is the collate's multiple, which TP must divide (PK007).
PACKED_RECIPE = '''from megatron.bridge.models import GPTModelProvider
from megatron.bridge.recipes.common import _sft_common


def packed_sft_config():
    cfg = _sft_common()
    cfg.model = GPTModelProvider(num_layers=4, hidden_size=256, num_attention_heads=16)
    cfg.model.tensor_model_parallel_size = 16
    cfg.model.sequence_parallel = True
    cfg.dataset.dataset_kwargs = None
    cfg.dataset.offline_packing_specs.packed_sequence_size = 4096
    return cfg
'''


@pytest.fixture(scope="module")
def later_release(tmp_path_factory, mb06) -> Path:
    root = tmp_path_factory.mktemp("later")
    shutil.copytree(mb06 / "megatron", root / "megatron")
    bridge = root / "megatron" / "bridge"
    info = bridge / "package_info.py"
    info.write_text(info.read_text().replace("MINOR = 6\nPATCH = 2", "MINOR = 7\nPATCH = 0"))
    energon = bridge / "data" / "builders" / "energon.py"
    anchor = '            raise ValueError("packing_buffer_size must be greater than 0 when set.")\n'
    text = energon.read_text()
    assert anchor in text
    energon.write_text(text.replace(anchor, anchor + NATIVE_PACKING_CHECK))
    _replace_once(bridge / "training" / "flex_dispatcher_backend.py", *DEEPEP_ON_BLACKWELL)
    _replace_once(bridge / "data" / "datasets" / "gpt_sft.py", *COLLATE_PADS_TO_8)
    _replace_once(bridge / "training" / "flex_dispatcher_backend.py", *FLEX_WITHOUT_BACKEND_FALLS_BACK)
    return root


def _replace_once(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1
    path.write_text(text.replace(old, new))


def findings(tmp_path: Path, root: Path, rule: str, text: str, name: str = "recipe") -> list:
    recipe = tmp_path / f"{name}.py"
    recipe.write_text(text)
    engine = Engine(CheckOptions(select=(rule,), search_paths=(root,), jobs=1, cache_dir=tmp_path / "cache"))
    report = engine.check_paths([str(recipe)])
    assert report.resolved == 1
    return report.findings


def pk013(tmp_path: Path, root: Path, encoder: str) -> list:
    return findings(tmp_path, root, "PK013", ENERGON_RECIPE.format(encoder=encoder), encoder)


def test_native_packing_with_the_qwen_vl_encoder_is_fine_where_the_source_supports_it(tmp_path, later_release, mb06):
    """Megatron-Bridge main's peft_energon.sh: PACKING_BUFFER_SIZE=16 with the Qwen3-VL recipe."""
    assert pk013(tmp_path, later_release, "QwenVLEnergonTaskEncoderConfig") == []
    [finding] = pk013(tmp_path, mb06, "QwenVLEnergonTaskEncoderConfig")  # 0.6.2: no encoder packs
    assert "no 0.6.x Energon task encoder implements" in finding.message


def test_native_packing_with_another_encoder_is_an_error_where_only_qwen_vl_packs(tmp_path, later_release):
    [finding] = pk013(tmp_path, later_release, "HFEnergonTaskEncoderConfig")
    assert finding.severity.name == "ERROR"
    assert "supports only the Qwen-VL task encoder" in finding.message
    assert "HFEnergonTaskEncoderConfig" in finding.message


def test_the_gpus_a_flex_backend_runs_on_are_the_release_s(tmp_path, later_release, mb06):
    [finding] = findings(tmp_path, mb06, "MO021", MOE_RECIPE)
    assert "Current GPU: NVIDIA GB200" in finding.message
    assert findings(tmp_path, later_release, "MO021", MOE_RECIPE) == []


def test_the_collate_multiple_a_pack_is_padded_to_is_the_release_s(tmp_path, later_release, mb06):
    assert findings(tmp_path, mb06, "PK007", PACKED_RECIPE) == []  # 16: TP 16 divides each pack
    [finding] = findings(tmp_path, later_release, "PK007", PACKED_RECIPE)
    assert "TP=16 with sequence parallelism" in finding.message


def test_flex_without_a_backend_is_an_info_where_validate_falls_back_to_alltoall(tmp_path, later_release, mb06):
    recipe = MOE_RECIPE.replace('"deepep"', "None")
    [before] = findings(tmp_path, mb06, "MO002", recipe)
    assert before.severity.name == "ERROR" and "Invalid backend: None" in before.message
    [after] = findings(tmp_path, later_release, "MO002", recipe)
    assert after.severity.name == "INFO" and "turns the dispatcher to 'alltoall'" in after.message
