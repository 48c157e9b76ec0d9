"""The recipes of every Megatron-Bridge release on the package index, linted as a user of that
release would (the wheel unpacked, mblint run inside it: the schema is derived from the
release's own source): every recipe function resolves or is pinned here as unresolved with
its reason, no internal error, and the error findings per release pinned. Each pinned error
was read against the release's source (see the closing note of issue 25)."""

from __future__ import annotations

import collections

import pytest
from wheels import ALL_RELEASES, wheel_root

from mblint.engine import CheckOptions, Engine

FOLDERS = ("recipes", "perf_recipes")
DATASET_HELPERS = {"default_peft_config", "default_squad_config"}
# *_config functions that build no ConfigContainer, read in each release: dataset and PEFT
# helpers (default_*, build_dataset_config, apply_dataset_override), the 0.3.0 model_config
# helper of recipes/gpt/gpt3_175b.py (returns a provider), and the Qwen3-Next PEFT recipe, which only raises
# NotImplementedError. mblint says why: none of them returns a ConfigContainer.
NOT_RECIPES = {
    "0.3.0": DATASET_HELPERS | {"model_config"},
    "0.3.1": DATASET_HELPERS | {"qwen3_next_80b_a3b_peft_config"},
    "0.4.0": DATASET_HELPERS | {"apply_dataset_override", "default_gsm8k_config", "default_openmathinstruct2_config", "qwen3_next_80b_a3b_peft_config"},
    "0.4.1": DATASET_HELPERS | {"apply_dataset_override", "default_gsm8k_config", "default_openmathinstruct2_config", "qwen3_next_80b_a3b_peft_config"},
    "0.4.2": DATASET_HELPERS | {"apply_dataset_override", "default_gsm8k_config", "default_openmathinstruct2_config", "qwen3_next_80b_a3b_peft_config"},
    "0.5.0": DATASET_HELPERS | {"apply_dataset_override", "default_gsm8k_config", "default_openmathinstruct2_config", "default_openmathinstruct2_thinking_packed_config", "qwen3_next_80b_a3b_peft_config"},
    "0.5.1": DATASET_HELPERS | {"apply_dataset_override", "default_gsm8k_config", "default_openmathinstruct2_config", "default_openmathinstruct2_thinking_packed_config", "qwen3_next_80b_a3b_peft_config"},
    "0.6.0": DATASET_HELPERS | {"build_dataset_config", "default_gsm8k_config", "default_openmathinstruct2_config", "default_openmathinstruct2_thinking_config", "default_tulu3_config", "qwen3_next_80b_a3b_peft_1gpu_h100_bf16_config"},
    "0.6.2": DATASET_HELPERS | {"build_dataset_config", "default_gsm8k_config", "default_openmathinstruct2_config", "default_openmathinstruct2_thinking_config", "default_tulu3_config", "qwen3_next_80b_a3b_peft_1gpu_h100_bf16_config"},
}
# ConfigContainer.validate() rejects each of these (the closing note of issue 25 lists them
# with the source lines): PK002 in-batch packing with micro_batch_size 1, PK007 CP=2 with
# pad_seq_to_mult 1, SQ001 model and dataset seq_length that differ, OT025 the GPT-OSS perf recipes'
# fast_cache_load/defer_npy_index_mmap without a path_to_cache (see tests/test_corpus_findings.py).
PINNED_ERRORS = {
    "0.3.0": {"PB008": 1, "SQ001": 1},
    "0.3.1": {"PB008": 1, "SQ001": 2},
    "0.4.0": {"PK002": 16, "SQ001": 2},
    "0.4.1": {"PK002": 16, "SQ001": 2},
    "0.4.2": {"PK002": 10, "SQ001": 2},
    "0.5.0": {"PK002": 10, "SQ001": 2},
    "0.5.1": {"PK002": 10, "SQ001": 2},
    "0.6.0": {"OT025": 2, "PB013": 2, "PK002": 6, "PK007": 1, "SQ001": 3},
    "0.6.2": {"OT025": 2, "PB013": 2, "PK002": 6, "PK007": 1, "SQ001": 3},
}


class RecordingEngine(Engine):
    """An engine that remembers which recipe functions did not resolve, and the notes why."""

    def __init__(self, options):
        super().__init__(options)
        self.unresolved: dict[str, str] = {}

    def check_job(self, job, text, report):
        notes = len(report.notes)
        cfg = super().check_job(job, text, report)
        if cfg is None:
            said = [note for note in report.notes[notes:] if job.function in note]
            self.unresolved[job.function] = said[0] if said else "no ConfigContainer"
        return cfg


def lint_release(version: str, monkeypatch):
    root = wheel_root(version)
    monkeypatch.chdir(root)
    engine = RecordingEngine(CheckOptions(jobs=1))
    folders = [f"megatron/bridge/{folder}" for folder in FOLDERS if (root / "megatron/bridge" / folder).is_dir()]
    return engine, engine.check_paths(folders)


@pytest.mark.parametrize("version", ALL_RELEASES)
def test_release_recipes(version, monkeypatch):
    engine, report = lint_release(version, monkeypatch)
    internal = [note for note in report.notes if "internal error" in note]
    assert internal == [] and report.errors == []
    [schema] = report.schemas
    assert schema["megatron_bridge_version"] == version and schema["source"].startswith("derived from ")
    assert report.resolved == report.recipes - len(engine.unresolved)
    assert set(engine.unresolved) == NOT_RECIPES[version], sorted(engine.unresolved.items())
    assert set(engine.unresolved.values()) == {"no ConfigContainer"}
    errors = collections.Counter(f.rule_id for f in report.findings if f.severity.name == "ERROR")
    assert dict(errors) == PINNED_ERRORS[version], sorted(
        (f.rule_id, f.location.path, f.location.line) for f in report.findings if f.severity.name == "ERROR")
