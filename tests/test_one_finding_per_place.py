"""One finding per problem and place: recipes that share a helper line report its problem
once, whatever values each recipe gives the message (issue 21, section 4; modelled on
Megatron-Bridge 0.6.2 perf_recipes/_common.py, whose `train.eval_iters = 0` five perf recipes
with different validation.eval_iters reached)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from mblint.cli import main

RECIPES = '''from megatron.bridge.recipes.common import _pretrain_common


def _benchmark_common(cfg):
    cfg.train.eval_iters = 0


def small_config():
    cfg = _pretrain_common()
    cfg.validation.eval_iters = 16
    _benchmark_common(cfg)
    return cfg


def large_config():
    cfg = _pretrain_common()
    cfg.validation.eval_iters = 32
    _benchmark_common(cfg)
    return cfg
'''


def _findings(tmp_path, monkeypatch, mb_roots, files):
    (tmp_path / ".git").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", *files, "--no-cache", "--select", "OT008", "--format", "json",
                                       "--search-path", str(mb_roots["0.6"])])
    assert result.exit_code == 1, result.output
    return json.loads(result.stdout)["findings"]


def test_a_shared_helper_line_reports_its_problem_once(tmp_path, monkeypatch, mb_roots):
    (tmp_path / "perf.py").write_text(RECIPES)
    findings = _findings(tmp_path, monkeypatch, mb_roots, ["perf.py"])
    places = [(f["location"]["path"], f["location"]["line"]) for f in findings]
    assert places == [("perf.py", 5)], findings
    # the recipe with the smaller value's message is the one kept, in any file order
    assert "16" in findings[0]["message"]


def test_the_finding_kept_does_not_depend_on_the_file_order(tmp_path, monkeypatch, mb_roots):
    (tmp_path / "a.py").write_text(RECIPES.replace("small_config", "first_config"))
    (tmp_path / "b.py").write_text("from a import _benchmark_common\n" + RECIPES.split("\n\n\ndef small_config")[0]
                                   .split("\n\n\ndef _benchmark_common")[0] + "\n\n\ndef other_config():\n"
                                   "    cfg = _pretrain_common()\n    cfg.validation.eval_iters = 8\n"
                                   "    _benchmark_common(cfg)\n    return cfg\n")
    forward = _findings(tmp_path, monkeypatch, mb_roots, ["a.py", "b.py"])
    backward = _findings(tmp_path, monkeypatch, mb_roots, ["b.py", "a.py"])
    assert forward == backward
    assert [(f["location"]["path"], f["location"]["line"]) for f in forward] == [("a.py", 5)]
