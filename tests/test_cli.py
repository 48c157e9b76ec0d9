"""The command line: exit codes, the default command, `show`, `rules`, `rule`, --version."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from mblint import __version__
from mblint.cli import main

RECIPE = '''\
from megatron.bridge.training.config import ConfigContainer, TrainingConfig
from megatron.bridge.data.builders import GPTSFTDatasetConfig
from megatron.bridge.data.packing import PackedSequenceSpecs

SEQ = 2048


def tiny_sft_config(mbs: int = 2):
    cfg = ConfigContainer(
        train=TrainingConfig(micro_batch_size=1, global_batch_size=16),
        dataset=GPTSFTDatasetConfig(seq_length=SEQ, dataset_root="/data/sft", enable_offline_packing=True,
                                    offline_packing_specs=PackedSequenceSpecs(packed_sequence_size=SEQ)),
    )
    cfg.train.micro_batch_size = mbs
    return cfg


def clean_sft_config():
    cfg = tiny_sft_config(mbs=1)
    return cfg
'''


def write(tmp_path: Path) -> Path:
    path = tmp_path / "recipe.py"
    path.write_text(RECIPE)
    return path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_version():
    result = invoke("--version")
    assert result.exit_code == 0 and __version__ in result.output


def test_version_names_the_bundled_megatron_bridge_schemas():
    from wheels import ALL_RELEASES  # every release on the package index

    lines = invoke("--version").output.splitlines()
    assert lines == [f"mblint {__version__}",
                     f"Bundled Megatron-Bridge schemas: {', '.join(ALL_RELEASES)} (Megatron-Core 0.16.0 to 0.19.2)"]


def test_check_reports_and_exits_1(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path)
    result = invoke("check", "recipe.py", "--no-cache")
    assert result.exit_code == 1
    # mbs=2 is the parameter default; the assignment `cfg.train.micro_batch_size = mbs` is line 14
    assert "recipe.py:14:5: PK001 [error] train.micro_batch_size is 2" in result.output
    assert "with micro_batch_size=1 each step still takes 16 packs of 2048 tokens" in result.output
    assert "proposes global_batch_size=8 with packed_sequence_size=4096" in result.output  # 16 // 2, 2048 * 2
    assert "Found 1 finding (1 error)" in result.output


def test_plain_paths_mean_check(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path)
    result = invoke("recipe.py", "--no-cache", "--format", "json")
    assert result.exit_code == 1
    document = json.loads(result.stdout)  # stderr holds the note that no Megatron-Bridge version is known
    assert document["version"] == 1
    assert [f["rule"] for f in document["findings"]] == ["PK001"]
    finding = document["findings"][0]
    # "cfg.train.micro_batch_size = mbs" is 32 characters from column 5: end column 37 (exclusive)
    assert finding["location"] == {"path": "recipe.py", "line": 14, "column": 5, "end_line": 14, "end_column": 37}
    assert finding["recipe"] == "recipe.py::tiny_sft_config"
    assert document["summary"] == {"files": 1, "recipes": 2, "resolved": 2, "findings": 1,
                                   "suppressed": 0, "baselined": 0, "stale_baseline": [], "not_analysed": [],
                                   "not_fully_checked": {"jobs": 0, "by_rule": {}}}


def test_select_ignore_and_fail_on(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path)
    assert invoke("check", "recipe.py", "--no-cache", "--ignore", "PK001").exit_code == 0
    assert invoke("check", "recipe.py", "--no-cache", "--select", "SY").exit_code == 0
    assert invoke("check", "recipe.py", "--no-cache", "--exit-zero").exit_code == 0


def test_missing_path_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["check", "nope.py", "--no-cache"])
    assert result.exit_code == 2
    assert "nope.py: no such file or directory" in result.output


def test_syntax_error_is_a_finding_and_other_files_are_linted(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path)
    (tmp_path / "broken.py").write_text("def f(:\n    pass\n")
    result = invoke("check", ".", "--no-cache")
    assert "broken.py:1:7: SY001 [error] syntax error" in result.output
    assert "recipe.py:14:5: PK001" in result.output


def test_show_json_with_overrides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path)
    (tmp_path / "over.yaml").write_text("# a comment\ntrain:\n  global_batch_size: 64\n")
    result = invoke("show", "recipe.py::tiny_sft_config", "--override-file", "over.yaml",
                    "--set", "model.seq_length=4096", "--set", "train.micro_batch_size=1", "--format", "json")
    assert result.exit_code == 0, result.output
    fields = json.loads(result.output)["fields"]
    gbs = fields["train.global_batch_size"]
    assert gbs["value"] == 64 and gbs["known"] is True
    assert gbs["origins"][0]["path"] == "recipe.py" and gbs["origins"][0]["line"] == 10  # TrainingConfig(...)
    assert gbs["origins"][-1] == {"path": "over.yaml", "line": 3, "column": 3, "end_line": 3, "end_column": 24}
    mbs = fields["train.micro_batch_size"]
    # the constructor kwarg (line 10), the assignment (line 14), then the second --set item
    assert mbs["value"] == 1 and [o["line"] for o in mbs["origins"]] == [10, 14, 2]
    assert mbs["origins"][-1]["path"] == "--set"
    assert fields["dataset.offline_packing_specs.pad_seq_to_mult"]["value"] == 1  # dataclass default


def test_show_rejects_a_bad_target():
    assert CliRunner().invoke(main, ["show", "no-function-here"]).exit_code == 2


def test_rules_and_rule_documentation():
    listing = invoke("rules")
    assert listing.exit_code == 0 and "PK001" in listing.output and "SY001" in listing.output
    doc = invoke("rule", "PK001")
    assert doc.exit_code == 0 and "## Why it matters" in doc.output
    assert CliRunner().invoke(main, ["rule", "ZZ999"]).exit_code == 2


def test_path_arguments_answer_as_click_path_with_one_question(tmp_path, monkeypatch):
    """A readable path argument is accepted on os.access alone (no stat); every answer is the
    one click.Path() gives: the value itself for a file, a folder or a missing path."""
    import click

    from mblint.cli import _ReadablePath

    (tmp_path / "r.py").write_text("")
    values = [str(tmp_path / "r.py"), str(tmp_path), str(tmp_path / "missing.py"), "-"]
    expected = [click.Path().convert(v, None, None) for v in values]
    assert [_ReadablePath().convert(v, None, None) for v in values] == expected


def test_a_run_asks_the_working_folder_once(tmp_path, monkeypatch):
    """Discovery, the settings look-ups and the display paths of a run use the working
    folder asked when the run starts, not one system call per file."""

    from mblint.engine import CheckOptions, Engine
    from mblint.results import FileResult
    from mblint.settings import SettingsResolver

    (tmp_path / "pkg").mkdir()
    for index in range(8):
        (tmp_path / "pkg" / f"r{index}.py").write_text("x = 1\n")
    (tmp_path / "mblint.toml").write_text("select = ['OT']\n")
    monkeypatch.chdir(tmp_path)
    engine = Engine(CheckOptions(settings=SettingsResolver(), jobs=1))
    monkeypatch.setattr(Engine, "check_files", lambda self, paths: ((path, FileResult(), set()) for path in paths))
    report = engine.check_paths(["pkg/r0.py", "pkg"])
    assert report.checked == [f"pkg/r{index}.py" for index in range(8)]
    monkeypatch.chdir(tmp_path / "pkg")
    assert engine.check_paths(["r1.py"]).checked == ["pkg/r1.py"]


def test_display_paths_follow_the_working_folder(tmp_path, monkeypatch):
    """A relative path's display is kept per working folder: asked again from another
    folder, the same path object names another file."""
    from mblint.engine import CheckOptions, Engine

    (tmp_path / "a").mkdir()
    monkeypatch.chdir(tmp_path)
    engine = Engine(CheckOptions(use_cache=True))
    path = Path("r.py")
    assert engine.project_display(path) == "r.py"
    monkeypatch.chdir(tmp_path / "a")
    assert engine.project_display(path) == "a/r.py"


def test_overrides_are_imported_only_for_a_run_with_overrides(tmp_path):
    import subprocess
    import sys

    write(tmp_path)
    probe = ("import sys; from mblint.cli import main\n"
             "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
             "print('overrides imported:', 'mblint.overrides' in sys.modules, file=sys.stderr)\n")

    def imported(*options: str) -> str:
        done = subprocess.run([sys.executable, "-c", probe, "check", "--no-cache", *options, "recipe.py"],
                              cwd=tmp_path, capture_output=True, text=True, check=True)
        return done.stderr.strip().splitlines()[-1]

    assert imported() == "overrides imported: False"
    assert imported("--set", "train.train_iters=10") == "overrides imported: True"


def test_importing_the_cli_leaves_the_garbage_collector_alone():
    import subprocess
    import sys

    probe = "import gc, mblint.cli, mblint.engine; print(gc.isenabled())"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_an_in_process_run_restores_the_garbage_collector(tmp_path, monkeypatch):
    import gc

    write(tmp_path)
    monkeypatch.chdir(tmp_path)
    was_enabled = gc.isenabled()  # the suite runs with the collector paused (conftest.py)
    gc.enable()
    try:
        CliRunner().invoke(main, ["check", "--no-cache", "recipe.py"])
        assert gc.isenabled()
    finally:
        if not was_enabled:
            gc.disable()
