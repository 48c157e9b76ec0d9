"""The facts of what a release does at job start (mblint.schema.runtime_facts), read from each
released wheel, against what was read there by hand, and the bundled data against them.

By hand, megatron/bridge/training/flex_dispatcher_backend.py, validate_flex_dispatcher_backend:
0.3.1 lines 77-78 (DeepEP: major in (8, 9) or name in ["NVIDIA B200", "NVIDIA B300"], "... (only
B200 and B300) GPUs"), 81-83 (HybridEP: major in [8, 9, 10]); 0.4.2 and 0.5.1 lines 80-93 (DeepEP
by the name's start, "... (B200/B300) GPUs. Current GPU: ..."); 0.6.2 lines 107-125 (also NCCL
EP: major in [9, 10]). The collate's multiple: the default of pad_seq_length_to_mult, 16, at
0.3.1 data/datasets/sft.py:206, 0.4.2 :259, 0.5.1 :264, 0.6.2 data/datasets/gpt_sft.py:98."""

from __future__ import annotations

from pathlib import Path

import pytest

from mblint.schema import load_schema
from mblint.schema.extract import SourceIndex, parse_module
from mblint.schema.runtime_facts import FLEX_MODULE, PACKED_DATASETS, collate_pad_multiple, flex_backend_gpus
from wheels import ALL_RELEASES, wheel_root

DEEPEP_03 = "DeepEP is supported for Ampere, Hopper, and Blackwell (only B200 and B300) GPUs"
DEEPEP_04 = "DeepEP is supported for Ampere, Hopper, and Blackwell (B200/B300) GPUs. Current GPU: {gpu}"
HYBRIDEP = "HybridEP is supported for GB200, GB300 with NVL72 and for Ampere, Hopper, B200 and B300 GPUs"
NCCLEP = "NCCL EP is supported for Hopper and Blackwell GPUs. Current GPU: {gpu}"
BASES = ("megatron.bridge.data.datasets.gpt_sft", "megatron.bridge.data.datasets.sft")


def release_index(release: str) -> SourceIndex:
    """The few modules the facts are read from, parsed from the release's wheel."""
    root = wheel_root(release)
    names = (FLEX_MODULE, *(q.rpartition(".")[0] for q in PACKED_DATASETS), *BASES)
    paths = {name: root / Path(*name.split(".")).with_suffix(".py") for name in names}
    return SourceIndex({name: parse_module(name, path) for name, path in paths.items() if path.is_file()})


@pytest.mark.parametrize("release", ALL_RELEASES)
def test_the_gpus_each_flex_backend_runs_on(release):
    found = flex_backend_gpus(release_index(release))
    old = release.startswith("0.3.")
    deepep = found["deepep"]
    assert (deepep["majors"], deepep["names"]) == ([8, 9], ["NVIDIA B200", "NVIDIA B300"])
    assert deepep["names_match"] == ("exact" if old else "start")
    assert deepep["message"] == (DEEPEP_03 if old else DEEPEP_04)
    assert (found["hybridep"]["majors"], found["hybridep"]["names"], found["hybridep"]["message"]) == (
        [8, 9, 10], [], HYBRIDEP)
    if release == "0.6.2":
        assert (found["ncclep"]["majors"], found["ncclep"]["message"]) == ([9, 10], NCCLEP)
    else:
        assert "ncclep" not in found
    assert load_schema(release).facts["flex_backend_gpus"] == found


@pytest.mark.parametrize("release", ALL_RELEASES)
def test_the_multiple_the_packed_collate_pads_to(release):
    found = collate_pad_multiple(release_index(release))
    assert found["value"] == 16
    assert found["source"].endswith(("datasets/gpt_sft.py:98",) if release.startswith("0.6") else ".py:" + {
        "0.3.0": "206", "0.3.1": "206", "0.4.0": "240", "0.4.1": "259", "0.4.2": "259", "0.5.0": "263",
        "0.5.1": "264"}[release])
    assert load_schema(release).facts["collate_pad_multiple"] == found


def test_a_check_in_another_form_is_no_fact(tmp_path):
    package = tmp_path / "megatron" / "bridge" / "training"
    package.mkdir(parents=True)
    path = package / "flex_dispatcher_backend.py"
    path.write_text(
        "def validate_flex_dispatcher_backend(model_config):\n"
        "    if model_config.moe_flex_dispatcher_backend == 'deepep':\n"
        "        if not supported(torch.cuda.get_device_properties(0)):\n"
        "            raise ValueError('no')\n"
        "    if model_config.moe_flex_dispatcher_backend == 'hybridep':\n"
        "        if torch.cuda.get_device_properties(0).major not in (9, 10):\n"
        "            raise ValueError(f'HybridEP: {torch.cuda.get_device_properties(0).name}!')\n")
    index = SourceIndex({FLEX_MODULE: parse_module(FLEX_MODULE, path)})
    assert flex_backend_gpus(index) == {"hybridep": {
        "majors": [9, 10], "names": [], "names_match": "exact", "message": "HybridEP: {gpu}!",
        "source": "megatron/bridge/training/flex_dispatcher_backend.py:6"}}


def test_bases_that_make_a_cycle_are_walked_once_each_and_the_walk_ends(tmp_path):
    """A hostile source: the packed dataset and its base derive from each other."""
    name = PACKED_DATASETS[0].rpartition(".")[0]
    path = tmp_path / "gpt_sft.py"
    path.write_text("class GPTSFTPackedDataset(Base):\n    pass\n\n\nclass Base(GPTSFTPackedDataset):\n"
                    "    def __init__(self, pad_seq_length_to_mult: int = 8):\n        pass\n")
    index = SourceIndex({name: parse_module(name, path)})
    assert collate_pad_multiple(index) == {"value": 8, "source": "megatron/bridge/data/packing/gpt_sft.py:6"}
