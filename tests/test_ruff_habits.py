"""What a ruff user reaches for (issue 21, section 5), and where YAML findings end (section 4)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from integration_support import GOOD_RECIPE, recipe, run


def test_statistics_counts_findings_per_rule(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(recipe(2))
    (tmp_path / "b.py").write_text(recipe(4, function="other_config"))
    (tmp_path / "conf.yaml").write_text("train:\n  micro_batch_size: 2\n")  # unpaired: SY005
    result = run(["check", "--no-cache", "--statistics", "."], tmp_path)
    assert result.exit_code == 1
    assert result.stdout == "2\tPK001\t[*] offline-packing-requires-mbs1\n1\tSY005\t    not-analysed\n"
    as_json = run(["check", "--no-cache", "--statistics", "--format", "json", "."], tmp_path)
    assert json.loads(as_json.stdout) == [
        {"code": "PK001", "name": "offline-packing-requires-mbs1", "count": 2, "fixable": True},
        {"code": "SY005", "name": "not-analysed", "count": 1, "fixable": False}]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_on_a_terminal_unless_no_color() -> None:
    from mblint.cli import _use_colour

    assert _use_colour(_Terminal(), {})
    assert not _use_colour(_Terminal(), {"NO_COLOR": "1"})
    assert _use_colour(_Terminal(), {"NO_COLOR": ""})  # no-color.org: set to a non-empty string
    assert not _use_colour(io.StringIO(), {})  # a pipe or a file
    assert _use_colour(io.StringIO(), {"FORCE_COLOR": "1"})
    assert not _use_colour(io.StringIO(), {"FORCE_COLOR": "1", "NO_COLOR": "1"})
    assert not _use_colour(_Terminal(), {"TERM": "dumb"})


def test_coloured_report_styles_location_rule_carets_and_summary(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(recipe(2))
    coloured = run(["check", "--no-cache", "r.py"], tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": None}).stdout
    assert coloured.startswith("\x1b[1mr.py:8:30:\x1b[0m \x1b[31m\x1b[1mPK001\x1b[0m [\x1b[31merror\x1b[0m] ")
    assert "\x1b[31m\x1b[1m^^^^^^^^^^^^^^^^^^ PK001\x1b[0m" in coloured
    assert "\x1b[1mFound 1 finding\x1b[0m (1 error)" in coloured
    plain = run(["check", "--no-cache", "r.py"], tmp_path, env={"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert "\x1b" not in plain and plain.startswith("r.py:8:30: PK001 [error] ")
    as_json = run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path, env={"FORCE_COLOR": "1"}).stdout
    assert "\x1b" not in as_json


def test_a_yaml_finding_stops_before_a_trailing_comment(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    (tmp_path / "run.yaml").write_text("# mblint: recipe=r.py::sft_config\ntrain:\n"
                                       "  micro_batch_size: 2   # tried 4 first\n")
    [finding] = json.loads(run(["check", "--no-cache", "--format", "json", "run.yaml"], tmp_path).stdout)["findings"]
    assert finding["rule"] == "PK001"
    # "  micro_batch_size: 2" is 21 characters: the span is columns 3 to 21, end exclusive 22
    assert finding["location"] == {"path": "run.yaml", "line": 3, "column": 3, "end_line": 3, "end_column": 22}
