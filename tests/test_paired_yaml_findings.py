"""Linting a paired override file reports what the file causes on the file's lines, and the
recipe's own findings at the recipe's lines (where linting the recipe puts them: never moved to
its def line as if the file caused them, issue 21 section 4), the override file related: the
job's verdict is the whole job (issue 31)."""

from __future__ import annotations

import json
from pathlib import Path

from integration_support import run

RECIPE = """from megatron.bridge.recipes.common import _sft_common
from megatron.bridge.data.packing import PackedSequenceSpecs


def my_sft_config():
    cfg = _sft_common()
    cfg.dataset.enable_offline_packing = True
    cfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=4096, pad_seq_to_mult=1)
    cfg.dataset.seq_length = 2048
    cfg.model.seq_length = 2048
    cfg.train.micro_batch_size = 1
    cfg.train.global_batch_size = 32
    return cfg
"""


def _lint(tmp_path: Path, mb_roots, yaml_text: str) -> tuple[dict, str]:
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "r.py").write_text(RECIPE)  # its own problem: PK006, pack 4096 against seq_length 2048 (line 8)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\n" + yaml_text)
    result = run(["check", "--no-cache", "--format", "json", "--ignore", "CV003",  # CV003: no world size given
                  "--search-path", str(mb_roots["0.6"]), "o.yaml"], tmp_path)
    return json.loads(result.stdout), result.stderr  # notes go to stderr beside JSON


def test_the_recipe_s_own_finding_is_at_its_line_on_the_override_file_s_run(tmp_path: Path, mb_roots) -> None:
    report, notes = _lint(tmp_path, mb_roots, "train:\n  train_iters: 100\n")
    [finding] = report["findings"]
    assert (finding["rule"], finding["location"]["path"], finding["location"]["line"]) == ("PK006", "r.py", 8)
    assert {"location": {"path": "o.yaml", "line": 1, "column": 1, "end_line": 1, "end_column": 2},
            "message": "in the job of r.py::my_sft_config with the override file o.yaml"} in finding["related"]
    assert "the recipe's own" not in notes


def test_what_the_override_file_causes_is_reported_on_its_line(tmp_path: Path, mb_roots) -> None:
    report, _ = _lint(tmp_path, mb_roots, "train:\n  micro_batch_size: 2\n")  # PK001, caused by the file
    places = [(f["rule"], f["location"]["path"], f["location"]["line"]) for f in report["findings"]]
    assert places == [("PK001", "o.yaml", 3), ("PK006", "r.py", 8)]


PACKED_MBS2 = """from megatron.bridge.recipes.common import _sft_common


def my_sft_config():
    cfg = _sft_common()
    cfg.dataset.enable_offline_packing = True
    cfg.train.micro_batch_size = 2
    cfg.train.global_batch_size = 4
    return cfg
"""


def test_findings_of_two_jobs_at_one_line_say_which_job_each_is(tmp_path: Path, mb_roots) -> None:
    """The recipe alone and the recipe with its override file both report PK001 at the recipe's
    micro_batch_size line, with the global batch each job has (4, and 6 from the file): the
    second names the override file's job (issue 31, item 5)."""
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "r.py").write_text(PACKED_MBS2)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  global_batch_size: 6\n")
    result = run(["check", "--no-cache", "--format", "json", "--search-path", str(mb_roots["0.6"]), "--select",
                  "PK001", "r.py", "o.yaml"], tmp_path)
    findings = json.loads(result.stdout)["findings"]
    assert [(f["location"]["path"], f["location"]["line"]) for f in findings] == [("r.py", 7), ("r.py", 7)]
    jobs = [[r["message"] for r in f["related"] if r["location"]["path"] == "o.yaml"] for f in findings]
    by_batch = dict(zip(["global_batch_size=2" in f["message"] for f in findings], jobs))
    assert by_batch == {True: [], False: ["in the job of r.py::my_sft_config with the override file o.yaml"]}
