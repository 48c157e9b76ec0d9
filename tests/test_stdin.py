"""`mblint check -` with --stdin-filename: the editor's unsaved text is checked as if it were
that file (its kind, settings, pairing and rules); nothing is written, --fix prints the fixed
source (as ruff does)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner
from integration_support import BAD_RECIPE, FIXABLE_RECIPE, GOOD_RECIPE, PK001_LINE


def run_stdin(args: list[str], cwd: Path, text: str, isolated: bool = True):
    from mblint.cli import main

    old = Path.cwd()
    os.chdir(cwd)
    try:
        try:
            runner = CliRunner(mix_stderr=False)
        except TypeError:  # click >= 8.2 always separates stderr
            runner = CliRunner()
        return runner.invoke(main, ["check", *(["--isolated"] if isolated else []), *args], input=text,
                             env={"GITHUB_ACTIONS": None}, catch_exceptions=False)
    finally:
        os.chdir(old)


def test_the_text_on_stdin_is_checked_as_that_file_not_the_one_on_disk(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)  # the saved file is clean; the buffer is not
    result = run_stdin(["-", "--stdin-filename", "r.py"], tmp_path, BAD_RECIPE)
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith(f"r.py:{PK001_LINE}:30: PK001 [error] train.micro_batch_size is 2")
    assert lines[2] == f"{PK001_LINE} |         train=TrainingConfig(micro_batch_size=2, global_batch_size=8),"
    assert (tmp_path / "r.py").read_text() == GOOD_RECIPE
    new = run_stdin(["--output-format", "concise", "-", "--stdin-filename", "drafts/new.py"], tmp_path, BAD_RECIPE)
    assert new.stdout.startswith(f"drafts/new.py:{PK001_LINE}:30: PK001 ")  # a file not yet saved
    assert not (tmp_path / "drafts").exists()


def test_the_settings_and_pairing_of_that_path_apply(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    (tmp_path / "conf").mkdir()
    override = "# mblint: recipe=../r.py::sft_config\ntrain:\n  micro_batch_size: 2\n"
    result = run_stdin(["--format", "json", "-", "--stdin-filename", "conf/run.yaml"], tmp_path, override)
    [finding] = json.loads(result.stdout)["findings"]
    assert (finding["rule"], finding["location"]["path"], finding["location"]["line"]) == ("PK001", "conf/run.yaml", 3)
    (tmp_path / "conf" / "mblint.toml").write_text('ignore = ["PK001"]\n')  # governs that path
    result = run_stdin(["--format", "json", "-", "--stdin-filename", "conf/run.yaml"], tmp_path, override, isolated=False)
    assert json.loads(result.stdout)["findings"] == []


def test_fix_prints_the_fixed_source_and_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "g.py").write_text(GOOD_RECIPE)  # another text on disk: never read as the buffer
    fixed = run_stdin(["--fix", "-", "--stdin-filename", "g.py"], tmp_path, FIXABLE_RECIPE)
    assert fixed.exit_code == 0
    assert fixed.stdout == FIXABLE_RECIPE.replace("    return cfg\n",
                                                  "    cfg.model.use_te_rng_tracker = True\n    return cfg\n")
    assert "Fixed 1 finding with 1 edit in 1 file." in fixed.stderr
    assert (tmp_path / "g.py").read_text() == GOOD_RECIPE
    diff = run_stdin(["--diff", "-", "--stdin-filename", "g.py"], tmp_path, FIXABLE_RECIPE)
    assert diff.exit_code == 1 and "+    cfg.model.use_te_rng_tracker = True\n" in diff.stdout
    unfixed = run_stdin(["--fix", "-", "--stdin-filename", "b.py"], tmp_path, BAD_RECIPE)  # PK001: unsafe only
    assert unfixed.stdout == BAD_RECIPE and "PK001" in unfixed.stderr and unfixed.exit_code == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g.py"]


def test_stdin_needs_a_filename(tmp_path: Path) -> None:
    result = run_stdin(["-"], tmp_path, BAD_RECIPE)
    assert result.exit_code == 2 and "--stdin-filename" in result.stderr


def test_a_suppression_in_the_text_on_stdin_applies(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    override = "# mblint: recipe=r.py::sft_config\ntrain:\n  micro_batch_size: 2\n"
    (tmp_path / "run.yaml").write_text("train:\n  micro_batch_size: 1\n")  # on disk: no mblint comment at all
    buffer = override.replace("micro_batch_size: 2", "micro_batch_size: 2  # mblint: ignore[PK001] tried")
    result = run_stdin(["--format", "json", "-", "--stdin-filename", "run.yaml"], tmp_path, buffer)
    document = json.loads(result.stdout)
    assert document["findings"] == [] and document["summary"]["suppressed"] == 1
