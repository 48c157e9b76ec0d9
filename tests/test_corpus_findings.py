"""`mblint check` over the real 0.3.1 and 0.6.2 recipes: no crash, no internal error, and the
error-level findings pinned per rule, so that a change shows up in review. Each pinned error
was read against the recipe code (see the closing note of issue 3):

- PK002 x6, 0.6.2 recipes/ministral3/h100/ministral3.py: `_sft_common_vlm()` turns in-batch
  packing on and every SFT/PEFT recipe sets micro_batch_size = 1, which validate() rejects.
- PK007 x1, 0.6.2 recipes/nemotronh/h100/nemotron_3_super.py: the 32k recipe sets CP=2 on
  offline-packed data whose pad_seq_to_mult stays 1 (THD with CP needs multiples of 4).
- SQ001 x3 (0.6.2) and x2 (0.3.1): Nemotron-Nano-v2 providers default seq_length to 131072
  while the recipes set dataset.seq_length = 8192; perf_recipes/gpt_oss/common.py sets
  model.seq_length = 8192 over a dataset at 4096. validate() asserts they are equal.
- PB013 x2, 0.6.2 perf_recipes/deepseek/gb200/deepseek_v3.py
  deepseek_v3_pretrain_256gpu_gb200_fp8mx_partial_cg_dev_config and the gb300 one: PP 4, VP 2
  (each recipe's own line, where the finding lands; it was one finding at the shared layout
  helper recipes/deepseek/h100/deepseek_v3.py:62 before issue 33) and the layout
  "Et*4|(tttt|)*14tmL", which has 16 stages (Megatron-Core 0.19.2's own
  PipelineParallelLayerLayout.parse_str_to_list gives 16, and PP 4 makes VP 4): the
  "virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout" assertion
  of TransformerConfig.__post_init__ (issue 24).
- OT025 x2, 0.6.2 perf_recipes/gpt_oss/common.py:144-145 (13 GPT-OSS 20B perf recipes): the
  dataset (a GPTDatasetConfig, path_to_cache None) gets defer_npy_index_mmap and fast_cache_load
  True; Megatron-Core 0.19.2 blended_megatron_dataset_config.py:100-113 asserts "--data-cache-path
  must be provided when ..." in the dataset's finalize() (the first error of those recipes run as
  written; the performance harness replaces cfg.dataset, the recipe alone does not).
- PB008 x1, 0.3.1 recipes/glm/glm45.py glm45_air_106b_pretrain_config: TP 1 with
  sequence_parallel = True (lines 174, 182); 0.3.1's model finalize() runs Megatron-Core
  0.16.1's __post_init__ unchanged, and model_parallel_config.py:409-411 raises "Cannot use
  sequence parallelism without tensor parallelism" (0.6.x turns SP off instead: info there).
"""

from __future__ import annotations

import collections
from pathlib import Path

import pytest

from mblint.engine import CheckOptions, Engine
from mblint.extract.interpreter import Interpreter
from mblint.report.json_format import finding_json

PINNED_ERRORS = {
    "0.3": {"PB008": 1, "SQ001": 2},
    "0.6": {"OT025": 2, "PB013": 2, "PK002": 6, "PK007": 1, "SQ001": 3},
}
FOLDERS = {"0.3": ["recipes"], "0.6": ["recipes", "perf_recipes"]}


@pytest.mark.parametrize("line", ["0.3", "0.6"])
def test_corpus_error_findings_are_pinned(line, mb_roots, monkeypatch):
    root = mb_roots[line]
    monkeypatch.chdir(root)
    engine = Engine(CheckOptions(jobs=1))
    report = engine.check_paths([f"megatron/bridge/{folder}" for folder in FOLDERS[line]])
    internal = [note for note in report.notes if "internal error" in note]
    assert internal == []
    assert report.errors == []
    errors = collections.Counter(f.rule_id for f in report.findings if f.severity.name == "ERROR")
    assert dict(errors) == PINNED_ERRORS[line], sorted(
        (f.rule_id, f.location.path, f.location.line) for f in report.findings if f.severity.name == "ERROR")
    # every finding points into the linted tree, at a real line
    for finding in report.findings:
        assert finding.location.path.startswith("megatron/bridge/"), finding
        assert finding.location.line >= 1


def _reported(paths: list[str], order=list) -> list[dict]:
    report = Engine(CheckOptions(jobs=1)).check_paths(order(paths))
    return [finding_json(finding) for finding in report.findings]


@pytest.mark.parametrize("line", ["0.3", "0.6"])
def test_corpus_findings_do_not_depend_on_reused_results_or_file_order(line, mb_roots, monkeypatch):
    """Calls with the same arguments are interpreted once and their results reused (the memo):
    what is reported is what interpreting every call afresh reports, and a file's findings do
    not depend on which files were linted before it in the same process."""
    root = mb_roots[line]
    monkeypatch.chdir(root)
    files = sorted(str(path) for folder in FOLDERS[line] for path in Path("megatron/bridge", folder).rglob("*.py"))
    reused = _reported(files)
    reversed_order = _reported(files, order=lambda paths: paths[::-1])
    monkeypatch.setattr(Interpreter, "memo_key", lambda self, func, args, kwargs: None)
    afresh = _reported(files)
    assert reused == afresh
    places = collections.Counter((f["rule"], f["location"]["path"], f["location"]["line"], f["location"]["column"],
                                  f["message"]) for f in reversed_order)
    assert places == collections.Counter((f["rule"], f["location"]["path"], f["location"]["line"],
                                          f["location"]["column"], f["message"]) for f in reused)
