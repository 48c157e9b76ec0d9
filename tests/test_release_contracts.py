"""A rule whose truth changed between releases reads it from the schema derived from the source
at hand, not from a version number: here a copy of Megatron-Bridge 0.6.2 made into a later
release by the one change the rule depends on."""

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
    return root


def pk013(tmp_path: Path, root: Path, encoder: str) -> list:
    recipe = tmp_path / f"{encoder}.py"
    recipe.write_text(ENERGON_RECIPE.format(encoder=encoder))
    engine = Engine(CheckOptions(select=("PK013",), search_paths=(root,), jobs=1, cache_dir=tmp_path / "cache"))
    report = engine.check_paths([str(recipe)])
    assert report.resolved == 1
    return report.findings


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
