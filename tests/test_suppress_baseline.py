"""Inline and file-level suppressions, SY003/SY004, and baselines."""

from __future__ import annotations

import json
from pathlib import Path

from integration_support import BAD_RECIPE, GOOD_RECIPE, PK001_LINE, recipe, run


def check(cwd: Path, *args: str) -> tuple[int, dict]:
    result = run(["check", "--format", "json", *args], cwd)
    assert result.exit_code in (0, 1), result.stderr
    return result.exit_code, json.loads(result.stdout)


def rules_at(document: dict) -> list[tuple[str, int]]:
    return [(f["rule"], f["location"]["line"]) for f in document["findings"]]


def test_inline_suppression_on_the_line(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(recipe(2, comment="  # mblint: ignore[PK001] mbs 2 is intended"))
    code, document = check(tmp_path, "r.py")
    assert code == 0 and document["findings"] == [] and document["summary"]["suppressed"] == 1


def test_inline_suppression_on_another_line_of_the_statement(tmp_path: Path) -> None:
    lines = BAD_RECIPE.splitlines()
    last = next(i for i, line in enumerate(lines) if line.strip() == ")" and i > PK001_LINE)
    lines[last] += "  # mblint: ignore[offline-packing-requires-mbs1]"  # by name, on the closing line
    (tmp_path / "r.py").write_text("\n".join(lines) + "\n")
    assert check(tmp_path, "r.py")[1]["findings"] == []
    # the same comment on the next statement does not suppress
    lines = BAD_RECIPE.splitlines()
    lines[last + 1] += "  # mblint: ignore[PK001]"
    (tmp_path / "r.py").write_text("\n".join(lines) + "\n")
    assert rules_at(check(tmp_path, "r.py")[1]) == [("PK001", PK001_LINE), ("SY003", last + 2)]


def test_suppression_of_another_rule_does_not_apply(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(recipe(2, comment="  # mblint: ignore[SY002]"))
    got = rules_at(check(tmp_path, "r.py")[1])
    assert ("PK001", PK001_LINE) in got and ("SY003", PK001_LINE) in got


def test_yaml_key_suppression(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::sft_config\ntrain:\n  micro_batch_size: 4\n")
    assert rules_at(check(tmp_path, "o.yaml")[1]) == [("PK001", 3)]
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::sft_config\ntrain:\n"
                                     "  micro_batch_size: 4  # mblint: ignore[PK001] checked with the team\n")
    code, document = check(tmp_path, "o.yaml")
    assert code == 0 and document["findings"] == []


def test_file_level_suppression(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text("# mblint: ignore-file[PK001]\n" + BAD_RECIPE)
    assert check(tmp_path, "r.py")[1]["findings"] == []
    (tmp_path / "r.py").write_text("# mblint: ignore-file\n" + BAD_RECIPE)
    assert check(tmp_path, "r.py")[1]["findings"] == []
    (tmp_path / "r.py").write_text("# mblint: ignore-file[PK001]\n" + GOOD_RECIPE)
    assert rules_at(check(tmp_path, "r.py")[1]) == [("SY003", 1)]


def test_unused_and_invalid_suppressions(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE + "\n".join([
        "A = 1  # mblint: ignore[PK001] no longer needed",  # unused -> SY003
        "B = 2  # mblint: ignroe[PK001]",  # misspelt -> SY004
        "C = 3  # mblint: ignore[PK001",  # unclosed -> SY004
        "D = 4  # mblint: ignore",  # no ids -> SY004
        "E = 5  # mblint: ignore[NOPE42, XX999]",  # unknown ids -> SY004
        "# mblint: world-size=8",  # another valid directive: silent
        "S = '# mblint: ignore[PK001] inside a string is not a comment'",
    ]) + "\n")
    base = len(GOOD_RECIPE.splitlines())
    code, document = check(tmp_path, "r.py")
    got = [(f["rule"], f["location"]["line"] - base) for f in document["findings"]]
    assert got == [("SY003", 1), ("SY004", 2), ("SY004", 3), ("SY004", 4), ("SY004", 5)]
    assert code == 1
    messages = [f["message"] for f in document["findings"]]
    assert "PK001" in messages[0] and "NOPE42" in messages[4] and "XX999" in messages[4]
    # unused suppressions of rules that are not enabled are not reported
    assert check(tmp_path, "r.py", "--select", "SY003")[1]["findings"] == []
    assert check(tmp_path, "r.py", "--ignore", "SY003,SY004")[1]["findings"] == []


def test_baseline_round_trip_survives_edits(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    result = run(["check", "r.py", "--write-baseline", "mblint-baseline.json"], tmp_path)
    assert result.exit_code == 0, result.stderr
    entries = json.loads((tmp_path / "mblint-baseline.json").read_text())["entries"]
    assert entries == [{"path": "r.py", "rule": "PK001", "recipe": "sft_config", "count": 1,
                        "fields": ["dataset.enable_offline_packing", "train.micro_batch_size"]}]
    code, document = check(tmp_path, "r.py", "--baseline", "mblint-baseline.json")
    assert code == 0 and document["findings"] == [] and document["summary"]["baselined"] == 1
    # code moves: still covered
    (tmp_path / "r.py").write_text(recipe(2, prefix="\n\nEXTRA = 1\n"))
    assert check(tmp_path, "r.py", "--baseline", "mblint-baseline.json")[1]["findings"] == []
    # a second recipe with the same problem is new
    (tmp_path / "r.py").write_text(BAD_RECIPE + recipe(2, function="other_config").split("\n\n", 1)[1])
    code, document = check(tmp_path, "r.py", "--baseline", "mblint-baseline.json")
    assert code == 1 and [f["recipe"] for f in document["findings"]] == ["r.py::other_config"]


def test_baseline_from_another_directory_and_sarif(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r.py").write_text(BAD_RECIPE)
    assert run(["check", "sub/r.py", "--write-baseline", "b.json"], tmp_path).exit_code == 0
    result = run(["check", "r.py", "--baseline", "../b.json", "--format", "sarif"], tmp_path / "sub")
    assert result.exit_code == 0
    assert json.loads(result.stdout)["runs"][0].get("results", []) == []


def test_stale_baseline_entries_are_reported(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    run(["check", "r.py", "--write-baseline", "b.json"], tmp_path)
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    result = run(["check", "r.py", "--baseline", "b.json"], tmp_path)
    assert result.exit_code == 0
    assert "stale baseline entry" in result.stderr and "r.py: PK001" in result.stderr
    assert "1 stale baseline entry" in result.stdout
    # a file not checked in this run (pre-commit passes a few files) is not stale
    (tmp_path / "other.py").write_text(GOOD_RECIPE)
    result = run(["check", "other.py", "--baseline", "b.json"], tmp_path)
    assert "stale" not in result.stderr + result.stdout


def test_malformed_baseline_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    (tmp_path / "b.json").write_text("{}")
    result = run(["check", "r.py", "--baseline", "b.json"], tmp_path)
    assert result.exit_code == 2 and "not an mblint baseline" in result.stderr


def test_a_noqa_naming_an_mblint_rule_is_reported_with_the_comment_to_write(tmp_path: Path) -> None:
    """mblint does not honour noqa: PK001 is still reported, and the noqa is SY004; a noqa for
    ruff alone (E501, F401, a bare one, ruff's file-level form) is not mblint's business."""
    text = recipe(2, comment="  # noqa: E501, pk001").replace(
        "\n\ndef sft_config", "import os  # noqa: F401\nimport sys  # noqa\n# ruff: noqa: F403\n\n\ndef sft_config")
    (tmp_path / "r.py").write_text(text)
    line = text.splitlines().index(next(x for x in text.splitlines() if "pk001" in x)) + 1
    for _ in range(2):  # the second run is served from the cache, and reports the same
        _, document = check(tmp_path, "--cache-dir", str(tmp_path / "cache"), "r.py")
        assert rules_at(document) == [("PK001", line), ("SY004", line)]
        [sy004] = [f for f in document["findings"] if f["rule"] == "SY004"]
        assert sy004["message"] == ("'# noqa: PK001' does not suppress mblint findings (noqa is ruff's and "
                                    "flake8's); write '# mblint: ignore[PK001] reason'")
        assert sy004["location"]["column"] == text.splitlines()[line - 1].index("# noqa") + 1
    (tmp_path / "r.py").write_text(recipe(1, comment="  # noqa: E501, B008"))
    assert rules_at(check(tmp_path, "--no-cache", "r.py")[1]) == []
