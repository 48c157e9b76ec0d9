"""Settings files: discovery (nearest wins), each key, unknown keys, CLI precedence."""

from __future__ import annotations

import json
from pathlib import Path

from integration_support import BAD_RECIPE, GOOD_RECIPE, run


def findings(cwd: Path, *args: str) -> list[dict]:
    result = run(["check", "--format", "json", *args], cwd)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def ids(cwd: Path, *args: str) -> list[str]:
    return [f["rule"] for f in findings(cwd, *args)]


def test_nearest_settings_file_wins(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.mblint]\nignore = ['PK001']\n")
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "r.py").write_text(BAD_RECIPE)
    (tmp_path / "b" / "c").mkdir(parents=True)
    (tmp_path / "b" / "mblint.toml").write_text("select = ['PK']\n")
    (tmp_path / "b" / "c" / "r.py").write_text(BAD_RECIPE)
    # a pyproject.toml without [tool.mblint] is skipped on the way up
    (tmp_path / "b" / "c" / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    got = findings(tmp_path, ".")
    assert [(f["rule"], f["location"]["path"]) for f in got] == [("PK001", "b/c/r.py")]


def test_unknown_key_is_an_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.mblint]\nselcet = ['PK']\n")
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    result = run(["check", "r.py"], tmp_path)
    assert result.exit_code == 2
    assert "unknown setting 'tool.mblint.selcet'" in result.stderr and "select" in result.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.mblint]\nworld-size = 0\n")
    result = run(["check", "r.py"], tmp_path)
    assert result.exit_code == 2 and "world-size" in result.stderr


def test_select_extend_select_and_cli_precedence(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    (tmp_path / "mblint.toml").write_text("select = ['SY']\n")
    assert ids(tmp_path, "r.py") == []
    (tmp_path / "mblint.toml").write_text("select = ['SY']\nextend-select = ['offline-packing-requires-mbs1']\n")
    assert ids(tmp_path, "r.py") == ["PK001"]
    (tmp_path / "mblint.toml").write_text("select = ['SY']\n")
    assert ids(tmp_path, "r.py", "--select", "PK001") == ["PK001"]  # --select replaces the setting
    assert ids(tmp_path, "r.py", "--isolated") == ["PK001"]  # settings ignored
    (tmp_path / "mblint.toml").write_text("ignore = ['pk001']\n")
    assert ids(tmp_path, "r.py") == []


def test_per_file_ignores(tmp_path: Path) -> None:
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(BAD_RECIPE)
    (tmp_path / "new.py").write_text(BAD_RECIPE)
    (tmp_path / "pyproject.toml").write_text("[tool.mblint.per-file-ignores]\n'legacy/*.py' = ['PK001']\n")
    result = run(["check", "--format", "json", "."], tmp_path)
    document = json.loads(result.stdout)
    assert [f["location"]["path"] for f in document["findings"]] == ["new.py"]
    assert document["summary"]["suppressed"] == 1


def test_exclude_applies_to_explicit_paths(tmp_path: Path) -> None:
    (tmp_path / "generated").mkdir()
    (tmp_path / "generated" / "r.py").write_text(BAD_RECIPE)
    (tmp_path / "mblint.toml").write_text("exclude = ['generated']\n")
    assert ids(tmp_path, ".") == []
    assert ids(tmp_path, "generated/r.py") == []  # force-exclude: pre-commit passes paths
    assert ids(tmp_path, "generated/r.py", "--no-force-exclude") == ["PK001"]
    # an exclude in a settings file deeper down is relative to that file
    (tmp_path / "mblint.toml").unlink()
    (tmp_path / "generated" / "mblint.toml").write_text("exclude = ['r.py']\n")
    assert ids(tmp_path, "generated/r.py") == []


def test_fail_on(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE + "\nX = 1  # mblint: bogus\n")  # SY004, a warning, only
    assert run(["check", "r.py"], tmp_path).exit_code == 1  # default fail-on = warning
    (tmp_path / "mblint.toml").write_text("fail-on = 'error'\n")
    assert run(["check", "r.py"], tmp_path).exit_code == 0
    assert run(["check", "r.py", "--fail-on", "warning"], tmp_path).exit_code == 1  # CLI wins


class _Probe:
    """A rule that reports the world size and schema line the engine gave it."""

    @staticmethod
    def make():
        from mblint.findings import Severity
        from mblint.rule import Rule

        class Probe(Rule):
            id, name, severity = "ZZ001", "probe", Severity.INFO
            summary, doc = "Probe.", "## What it does\nProbe."
            versions = ("0.3", "0.6")

            def check(self, cfg, ctx):
                yield ctx.report(cfg, f"world={ctx.world_size}/{ctx.world_size_source} line={cfg.schema_version}")

        return Probe


def probe(cwd: Path, monkeypatch, *paths: str, **options) -> list[str]:
    from mblint.engine import CheckOptions, Engine
    from mblint.plugins import LoadedPlugins
    from mblint.settings import SettingsResolver

    monkeypatch.chdir(cwd)
    engine = Engine(CheckOptions(settings=SettingsResolver(), **options), LoadedPlugins(rules=[_Probe.make()]))
    return [f.message for f in engine.check_paths(list(paths)).findings if f.rule_id == "ZZ001"]


def test_world_size_and_version_settings(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "r.py").write_text(GOOD_RECIPE)
    # cfg.schema_version names the schema: the bundled release a version setting maps to
    assert probe(tmp_path, monkeypatch, "r.py") == ["world=None/ line=0.6.2"]
    (tmp_path / "mblint.toml").write_text("world-size = 16\nmegatron-bridge-version = '0.3'\n")
    assert probe(tmp_path, monkeypatch, "r.py") == ["world=16/setting line=0.3.1"]
    assert probe(tmp_path, monkeypatch, "r.py", world_size=8, version="0.6") == ["world=8/option line=0.6.2"]


def test_world_size_is_kept_per_recipe_function(tmp_path: Path, monkeypatch) -> None:
    from integration_support import recipe

    text = recipe(1, "pretrain_8gpus_config") + recipe(1, "pretrain_16gpus_config").split("\n\n", 1)[1]
    (tmp_path / "r.py").write_text(text)
    assert sorted(probe(tmp_path, monkeypatch, "r.py")) == ["world=16/name line=0.6.2", "world=8/name line=0.6.2"]


def test_rule_plans_follow_the_rules_in_force() -> None:
    from mblint.engine import CheckOptions
    from mblint.plugins import LoadedPlugins
    from mblint.rule_run import RuleRun

    first, second = _Probe.make(), _Probe.make()
    rule_run = RuleRun(CheckOptions(), LoadedPlugins(rules=[first, second]))
    rule_run.rules = [first]
    plan = rule_run.plan("0.6", None, "", frozenset())
    rule_run.rules = [second]
    assert [type(rule) for rule, _ in rule_run.plan("0.6", None, "", frozenset()).pairs] == [second]
    rule_run.rules = [first]
    assert rule_run.plan("0.6", None, "", frozenset()) is plan


def test_search_paths_relative_to_settings_file(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()  # one repository: search paths must stay inside it (tests/test_hostile.py)
    (tmp_path / "helpers_lib").mkdir()
    (tmp_path / "helpers_lib" / "helpers.py").write_text(GOOD_RECIPE.replace("def sft_config", "def base"))
    (tmp_path / "project" / "recipes").mkdir(parents=True)
    (tmp_path / "project" / "recipes" / "r.py").write_text(
        "from helpers import base\n\n\ndef sft_config():\n    cfg = base()\n    cfg.train.micro_batch_size = 2\n    return cfg\n")
    assert ids(tmp_path / "project", "recipes") == ["SY005"]  # helpers not found: the recipe is not analysed
    (tmp_path / "project" / "mblint.toml").write_text("search-paths = ['../helpers_lib']\n")
    assert ids(tmp_path / "project", "recipes") == ["PK001"]


def test_pairing_setting(tmp_path: Path) -> None:
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "r.py").write_text(GOOD_RECIPE)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "run.yaml").write_text("train:\n  micro_batch_size: 4\n")
    assert ids(tmp_path, "conf") == ["SY005"]  # an override file paired with no recipe
    (tmp_path / "pyproject.toml").write_text("[tool.mblint.pairing]\n'conf/*.yaml' = 'recipes/r.py::sft_config'\n")
    got = findings(tmp_path, "conf")
    assert [(f["rule"], f["location"]["path"], f["location"]["line"]) for f in got] == [("PK001", "conf/run.yaml", 2)]


def test_settings_command(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r.py").write_text(GOOD_RECIPE)
    (tmp_path / "pyproject.toml").write_text(
        "[tool.mblint]\nselect = ['PK']\nworld-size = 8\nsearch-paths = ['lib']\n"
        "[tool.mblint.per-file-ignores]\n'legacy/*' = ['PK001']\n")
    result = run(["settings", "sub/r.py"], tmp_path)
    assert result.exit_code == 0
    assert f"# from {tmp_path / 'pyproject.toml'}" in result.stdout
    assert "select = [\"PK\"]" in result.stdout and "world-size = 8" in result.stdout
    assert "# fail-on = (not set)" in result.stdout
    assert '"legacy/*" = ["PK001"]' in result.stdout
    data = json.loads(run(["settings", "--format", "json", "sub/r.py"], tmp_path).stdout)
    assert data["search-paths"] == [str((tmp_path / "lib").resolve())]
    (tmp_path / "pyproject.toml").write_text("[tool.mblint]\nnope = 1\n")
    bad = run(["settings", "sub/r.py"], tmp_path)
    assert bad.exit_code == 2 and "'tool.mblint.nope'" in bad.stderr


def test_folders_resolve_as_realpath_does(tmp_path, monkeypatch):
    """Settings are found from a file's real folder; mblint builds each folder's real path on
    its parent's (kept), which must agree with os.path.realpath, symbolic links and ".." too."""
    import os

    from mblint.settings import SettingsResolver

    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "x" / "y").mkdir(parents=True)
    (tmp_path / "a" / "link").symlink_to(tmp_path / "x")
    (tmp_path / "a" / "b" / "rel").symlink_to(Path("..") / ".." / "x" / "y")
    monkeypatch.chdir(tmp_path / "a")
    resolver = SettingsResolver()
    for file in ["b/c/r.py", "link/y/r.py", "b/rel/r.py", "link/../b/r.py", "missing/deeper/r.py",
                 str(tmp_path / "a" / "link" / "y" / "r.py"), "r.py"]:
        assert resolver._real_folder(Path(file)) == os.path.realpath(Path(file).parent), file


def test_one_settings_answer_per_folder_and_links_on_their_own(tmp_path, monkeypatch):
    """The files of one folder share one look-up up the tree; a symbolic link to a file in a
    folder with other settings is still resolved on its own, whatever order it is asked in."""
    from mblint.settings import SettingsResolver

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "mblint.toml").write_text("select = ['PK']\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "mblint.toml").write_text("select = ['OT']\n")
    (tmp_path / "b" / "target.py").write_text("")
    for name in ("r1.py", "r2.py", "r3.py"):
        (tmp_path / "a" / name).write_text("")
    (tmp_path / "a" / "link.py").symlink_to(tmp_path / "b" / "target.py")
    monkeypatch.chdir(tmp_path)
    resolver = SettingsResolver()
    looked_up = []
    nearest = resolver._nearest
    monkeypatch.setattr(resolver, "_nearest", lambda folder: looked_up.append(folder) or nearest(folder))
    assert resolver.for_path(Path("a/r1.py")).select == ("PK",)
    assert resolver.for_path(Path("a/link.py")).select == ("OT",)
    assert [resolver.for_path(p).select for p in (Path("a/r2.py"), "a/r3.py")] == [("PK",), ("PK",)]
    assert looked_up == [str((tmp_path / "a").resolve()), str((tmp_path / "b").resolve())]


def test_settings_file_test_answers_as_isfile(tmp_path):
    """A settings file is looked for without an exception per missing name; the answer is
    os.path.isfile's: a folder or a dangling link named like one is not a settings file."""
    import os

    from mblint.settings import _is_file

    (tmp_path / "file.toml").write_text("")
    (tmp_path / "folder.toml").mkdir()
    (tmp_path / "link.toml").symlink_to(tmp_path / "file.toml")
    (tmp_path / "dangling.toml").symlink_to(tmp_path / "nowhere.toml")
    for name in ("file.toml", "folder.toml", "link.toml", "dangling.toml", "missing.toml"):
        assert _is_file(str(tmp_path / name)) == os.path.isfile(tmp_path / name), name


def test_a_link_keeps_its_own_folders_settings(tmp_path, monkeypatch):
    """A symbolic link to a file in a folder with other settings gets the settings of the
    folder the link is in."""
    from mblint.engine import CheckOptions, Engine
    from mblint.settings import SettingsResolver

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "mblint.toml").write_text("select = ['PK']\n")
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "mblint.toml").write_text("select = ['OT']\n")
    (tmp_path / "b" / "target.py").write_text("")
    (tmp_path / "a" / "r1.py").write_text("")
    (tmp_path / "a" / "link.py").symlink_to(tmp_path / "b" / "target.py")
    monkeypatch.chdir(tmp_path)
    engine = Engine(CheckOptions(settings=SettingsResolver()))
    engine.check_paths(["a/r1.py", "a/link.py"])
    assert [engine.settings_for(Path(p)).select for p in ("a/r1.py", "a/link.py")] == [("PK",), ("OT",)]
