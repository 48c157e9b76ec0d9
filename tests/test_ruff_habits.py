"""What a ruff user reaches for (issue 21, section 5), and where YAML findings end (section 4)."""

from __future__ import annotations

import io
import json
from pathlib import Path

from integration_support import FIXABLE_RECIPE, GOOD_RECIPE, recipe, run


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


# ----- issue 34, section 3 ------------------------------------------------------------------

SUMMARY_TWO = "Found 2 findings (2 errors) in 2 files, 2 configurations resolved."


def test_output_format_is_ruffs_name_for_format_and_concise_is_one_line_a_finding(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(recipe(2))
    (tmp_path / "g.py").write_text(FIXABLE_RECIPE)
    concise = run(["check", "--isolated", "--no-cache", "--ignore", "CV003", "--output-format", "concise", "r.py", "g.py"],
                  tmp_path)  # CV003: g.py's world size is unknown
    lines = concise.stdout.splitlines()
    assert lines[0].startswith("g.py:10:5: CG003 [error] model.cuda_graph_impl is 'transformer_engine', but ")
    assert lines[1].startswith("r.py:8:30: PK001 [error] train.micro_batch_size is 2, but offline sequence packing")
    assert lines[2] == SUMMARY_TWO and not any(line.startswith(("  ", " |")) for line in lines)
    as_json = run(["check", "--isolated", "--no-cache", "--output-format", "json", "r.py"], tmp_path)
    assert json.loads(as_json.stdout)["findings"][0]["rule"] == "PK001"
    full = run(["check", "--isolated", "--no-cache", "--output-format", "full", "r.py"], tmp_path)
    assert full.stdout == run(["check", "--isolated", "--no-cache", "--format", "text", "r.py"], tmp_path).stdout


def test_the_footer_counts_safe_and_unsafe_fixes_as_ruff_does(tmp_path: Path) -> None:
    """CG003's fix (the RNG tracker) is safe, PK001's (the batch arithmetic) unsafe."""
    (tmp_path / "r.py").write_text(recipe(2))
    (tmp_path / "g.py").write_text(FIXABLE_RECIPE)

    def footer(*args: str) -> str:
        lines = run(["check", "--isolated", "--no-cache", *args], tmp_path).stdout.splitlines()
        return lines[lines.index(next(line for line in lines if line.startswith(("Found", "All")))) + 1]

    assert footer("r.py", "g.py") == "[*] 1 fixable with `--fix` (1 unsafe fix available with `--fix --unsafe-fixes`)."
    assert footer("--output-format", "concise", "g.py") == "[*] 1 fixable with `--fix`."
    assert footer("r.py") == "1 unsafe fix available with `--fix --unsafe-fixes`."
    assert footer("--unsafe-fixes", "r.py", "g.py") == "[*] 2 fixable with `--fix`."
    assert footer("--select", "SY", "r.py").startswith("Linted against")  # nothing fixable: no footer


def test_diff_with_only_unsafe_fixes_says_so(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(recipe(2))
    only_unsafe = run(["check", "--isolated", "--no-cache", "--diff", "r.py"], tmp_path)
    assert only_unsafe.exit_code == 0 and only_unsafe.stdout == ""
    assert "No fixes would be applied (1 finding with an unsafe fix: add --unsafe-fixes)." in only_unsafe.stderr
    (tmp_path / "g.py").write_text(FIXABLE_RECIPE)
    both = run(["check", "--isolated", "--no-cache", "--diff", "r.py", "g.py"], tmp_path)
    assert both.exit_code == 1 and both.stdout.startswith("--- a/g.py")
    assert ("Would fix 1 finding with 1 edit in 1 file (1 more finding with an unsafe fix: add --unsafe-fixes)."
            in both.stderr)
    assert recipe(2) == (tmp_path / "r.py").read_text()  # --diff writes nothing
