"""The job's GPU, where the recipe's name says it, decides what Megatron-Bridge's
``apply_flex_dispatcher_backend`` leaves (read from the release's own source with the GPU's
properties: 0.6.2 training/flex_dispatcher_backend.py:33-99, 0.3.1 the same file); a result
that read the GPU is reused only for the same GPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from mblint.gpus import gpu_of_recipe
from mblint.model import UNKNOWN
from mblint.resolve import Project

RECIPES = """\
from megatron.bridge.models import GPTModelProvider
from megatron.bridge.recipes.common import _pretrain_common
from megatron.bridge.training.flex_dispatcher_backend import apply_flex_dispatcher_backend


def _base(backend):
    cfg = _pretrain_common()
    cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=64)
    cfg.model.moe_token_dispatcher_type = "alltoall"
    cfg.model.moe_flex_dispatcher_backend = backend
    apply_flex_dispatcher_backend(cfg.model, backend)
    return cfg


def moe_pretrain_8gpu_h100_bf16_config():
    return _base("deepep")


def moe_pretrain_8gpu_gb200_bf16_config():
    return _base("deepep")


def moe_pretrain_8gpu_b300_bf16_config():
    return _base("deepep")


def moe_pretrain_config():
    return _base("deepep")


def moe_pretrain_8gpu_gb200_fp8_config():
    return _base(None)
"""


def dispatch(project: Project, recipes: Path, function: str) -> tuple:
    cfg = project.resolve_function(recipes, function)
    return cfg.value("model.moe_token_dispatcher_type"), cfg.value("model.moe_flex_dispatcher_backend")


@pytest.fixture
def recipes(tmp_path) -> Path:
    team = tmp_path / "team"
    team.mkdir()
    (team / "__init__.py").write_text("")
    path = team / "recipes.py"
    path.write_text(RECIPES)
    return path


def test_the_gpu_comes_from_the_recipe_name():
    assert gpu_of_recipe("qwen3_235b_a22b_pretrain_64gpu_gb200_bf16_config").major == 10
    assert gpu_of_recipe("qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config").name_prefix == "NVIDIA H100"
    assert gpu_of_recipe("qwen3_30b_a3b_pretrain_config") is None
    assert gpu_of_recipe("x_pretrain_8gpu_vr200_bf16_config") is None  # no facts for it


def test_apply_flex_dispatcher_backend_follows_the_gpu_in_0_6(recipes, mb06, tmp_path):
    project = Project([mb06], "0.6", tmp_path)
    # the same helper, the same arguments, in one run: one result per GPU
    assert dispatch(project, recipes, "moe_pretrain_8gpu_h100_bf16_config") == ("flex", "deepep")
    assert dispatch(project, recipes, "moe_pretrain_8gpu_gb200_bf16_config") == ("alltoall", None)
    assert dispatch(project, recipes, "moe_pretrain_8gpu_b300_bf16_config") == ("flex", "deepep")
    assert dispatch(project, recipes, "moe_pretrain_config") == (UNKNOWN, UNKNOWN)
    assert dispatch(project, recipes, "moe_pretrain_8gpu_h100_bf16_config") == ("flex", "deepep")
    # no backend: nothing changes, on any known GPU
    assert dispatch(project, recipes, "moe_pretrain_8gpu_gb200_fp8_config") == ("alltoall", None)


def test_0_3_compares_the_device_name_exactly(recipes, mb03, tmp_path):
    project = Project([mb03], "0.3", tmp_path)
    assert dispatch(project, recipes, "moe_pretrain_8gpu_h100_bf16_config") == ("flex", "deepep")
    # not supported: 0.3.1 skips the configuration and leaves the fields as they were
    assert dispatch(project, recipes, "moe_pretrain_8gpu_gb200_bf16_config") == ("alltoall", "deepep")
    # "NVIDIA B300 SXM6 AC" is not in ["NVIDIA B200", "NVIDIA B300"]: which board, mblint cannot know
    assert dispatch(project, recipes, "moe_pretrain_8gpu_b300_bf16_config")[0] is UNKNOWN
