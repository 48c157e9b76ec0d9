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


def test_the_finding_kept_names_every_recipe_it_stands_for(tmp_path, monkeypatch, mb_roots):
    """JSON lists them all, text gives the count and the first few (issue 33, section 4)."""
    body = "\n\n\ndef {}():\n    cfg = _pretrain_common()\n    cfg.validation.eval_iters = {}\n    _benchmark_common(cfg)\n    return cfg\n"
    (tmp_path / "perf.py").write_text(RECIPES.split("\n\n\ndef small_config")[0]
                                      + "".join(body.format(f"r{n}_config", 8 * n) for n in range(1, 6)))
    (tmp_path / "more.py").write_text("from megatron.bridge.recipes.common import _pretrain_common\n"
                                      "from perf import _benchmark_common\n" + body.format("other_config", 8))
    findings = _findings(tmp_path, monkeypatch, mb_roots, ["perf.py", "more.py"])
    assert len(findings) == 1
    assert findings[0]["recipes"] == ["more.py::other_config", *(f"perf.py::r{n}_config" for n in range(1, 6))]
    result = CliRunner().invoke(main, ["check", "perf.py", "more.py", "--no-cache", "--select", "OT008",
                                       "--search-path", str(mb_roots["0.6"])])
    assert "  = stands for 6 recipes: other_config, r1_config, r2_config and 3 more\n" in result.stdout


def test_a_finding_of_one_recipe_names_no_others(tmp_path, monkeypatch, mb_roots):
    (tmp_path / "perf.py").write_text(RECIPES.split("\n\n\ndef large_config")[0])
    findings = _findings(tmp_path, monkeypatch, mb_roots, ["perf.py"])
    assert len(findings) == 1 and "recipes" not in findings[0]


def test_recipes_sharing_a_line_survive_the_cache(tmp_path, monkeypatch, mb_roots):
    """A second run reads each file's findings from the cache: repeats of another file's finding
    still count their recipes."""
    (tmp_path / "a.py").write_text(RECIPES)
    (tmp_path / "b.py").write_text("from a import _benchmark_common\nfrom megatron.bridge.recipes.common import "
                                   "_pretrain_common\n\n\ndef other_config():\n    cfg = _pretrain_common()\n"
                                   "    cfg.validation.eval_iters = 16\n    _benchmark_common(cfg)\n    return cfg\n")
    (tmp_path / ".git").mkdir(exist_ok=True)
    monkeypatch.chdir(tmp_path)
    args = ["check", "a.py", "b.py", "--select", "OT008", "--format", "json", "--search-path", str(mb_roots["0.6"])]
    runs = [json.loads(CliRunner().invoke(main, args).stdout)["findings"] for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[1][0]["recipes"] == ["a.py::large_config", "a.py::small_config", "b.py::other_config"]
