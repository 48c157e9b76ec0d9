"""Hostile input, round two (issue #22), through the real command line: nothing read or
quoted from outside the project and its search paths, the cache never writes through a link,
no control character reaches a terminal or a CI log, bounded work on every file mblint reads,
clear errors instead of tracebacks, and fixes that never damage a file. Each test is modelled
on an attack that broke the promise before; docs/robustness.md states the promises."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from mblint.cli import main

FIXTURES = Path(__file__).parent.parent / "fixtures" / "robustness"
PAIRED = "# mblint: recipe=recipes/good.py::good_sft_recipe\n"
TERMINAL_CONTROLS = ("\x1b", "\x07", "\x9b")


@pytest.fixture
def tree(tmp_path, monkeypatch) -> Path:
    """A project (a pyproject.toml marks its root) with the fixture seed and good recipe."""
    work = tmp_path / "work"
    shutil.copytree(FIXTURES / "recipes", work / "recipes")
    (work / "pyproject.toml").write_text("[project]\nname = 'victim'\n")
    monkeypatch.chdir(work)
    return work


def invoke(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return result


def check(*args: str):
    return invoke("check", "--no-cache", *args)


def findings(result) -> list[dict]:
    return json.loads(result.stdout)["findings"]


# ----- output injection -------------------------------------------------------------------


def test_github_format_neutralises_control_characters_in_keys_and_file_names(tree):
    name = "e\x1b[2J.yaml"
    (tree / name).write_text(PAIRED + 'train:\n  "\\e]0;pwned\\a\\e[2Jmicro": 1\n')
    result = check("--format", "github", name)
    assert "OT001" in result.stdout and "file=e\\x1b[2J.yaml" in result.stdout
    assert not any(control in result.output for control in TERMINAL_CONTROLS)


def test_show_neutralises_control_characters_and_cannot_forge_lines(tree):
    name = "g\x1b]0;t\x07\nx.y = 1.py"
    shutil.copyfile(tree / "recipes" / "good.py", tree / "recipes" / name)
    (tree / "recipes" / name).write_text((tree / "recipes" / "good.py").read_text())
    result = invoke("show", f"recipes/{name}::good_sft_recipe")
    assert result.exit_code == 0, result.output
    assert "train.micro_batch_size = 2" in result.stdout
    assert not any(control in result.output for control in TERMINAL_CONTROLS)
    assert not any(line.startswith("x.y = 1") for line in result.stdout.splitlines())


# ----- nothing outside the project is read or quoted -----------------------------------------


@pytest.fixture
def secret(tmp_path) -> Path:
    """A credentials file outside the project, whose first line a report must never show."""
    path = tmp_path / "home" / "credentials.py"
    path.parent.mkdir()
    path.write_text("https://user:TOKEN123@example.com = 1\nSECRET_TWO = = 2\n")
    return path


@pytest.mark.parametrize("fmt", ["text", "json", "github", "sarif"])
def test_pairing_comment_cannot_read_a_file_outside_the_project(tree, secret, fmt):
    relative = os.path.relpath(secret, tree)
    for name, where in [("absolute.yaml", str(secret)), ("dotdot.yaml", relative)]:
        (tree / name).write_text(f"# mblint: recipe={where}::x\ntrain:\n  micro_batch_size: 1\n")
    result = check("--format", fmt, ".")
    assert "TOKEN123" not in result.output and "SECRET_TWO" not in result.output
    assert "absolute.yaml: paired recipe" in result.stderr and "outside the project" in result.stderr
    assert "dotdot.yaml: paired recipe" in result.stderr and result.exit_code == 2
    assert "PK001" in result.stdout  # the project's own files are still linted


def test_symbolic_link_to_a_file_outside_the_project_is_not_read(tree, secret):
    (tree / "recipes" / "evil.py").symlink_to(secret)
    (tree / "recipes" / "evil.yaml").symlink_to(secret)
    result = check("recipes", "recipes/evil.py")
    assert "TOKEN123" not in result.output and "SECRET_TWO" not in result.output
    assert "recipes/evil.py:1:1: SY001 [error] not read: outside the project" in result.stdout
    assert "PK001" in result.stdout


def test_imports_and_settings_search_paths_stay_in_the_project(tree, secret):
    # Read (through the settings' search path, or the folders above the project that were
    # import roots), it would give PK001 on thief.py.
    (secret.parent / "outside.py").write_text("MBS = 2\n")
    (tree / "pyproject.toml").write_text(f"[tool.mblint]\nsearch-paths = [{str(secret.parent)!r}]\n")
    (tree / "recipes" / "thief.py").write_text(
        "from megatron.bridge.training.config import ConfigContainer\n"
        "from outside import MBS\nfrom home.outside import MBS as DOTTED\nfrom .common import _sft_common\n\n\n"
        "def absolute_recipe() -> ConfigContainer:\n    cfg = _sft_common()\n"
        "    cfg.train.micro_batch_size = MBS\n    return cfg\n\n\n"
        "def relative_recipe() -> ConfigContainer:\n    cfg = _sft_common()\n"
        "    cfg.train.micro_batch_size = DOTTED\n    return cfg\n")
    result = check("--format", "text", ".")
    assert "TOKEN123" not in result.output and "SECRET_TWO" not in result.output
    assert f"search path {secret.parent} is outside the project: not searched" in result.stderr
    assert "thief.py" not in result.stdout, result.stdout
    assert result.exit_code == 2 and "recipes/good.py:10:5: PK001" in result.stdout


def test_malformed_pairing_is_a_clear_error(tree):
    (tree / "empty.yaml").write_text("# mblint: recipe=::\ntrain:\n  micro_batch_size: 1\n")
    result = check(".")
    assert "empty.yaml: malformed pairing '::'" in result.stderr and "internal error" not in result.output
    assert result.exit_code == 2 and "PK001" in result.stdout


# ----- the cache never writes through a link, and a damaged entry is ignored ----------------


def cache_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.is_file() or p.is_symlink()]


def test_a_committed_cache_link_is_not_written_through(tree, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tree / ".mblint_cache").symlink_to(elsewhere)
    result = invoke("check", "recipes")
    assert result.exit_code == 1 and "PK001" in result.stdout
    assert cache_files(elsewhere) == []


def test_a_dangling_gitignore_link_in_the_cache_creates_nothing(tree, tmp_path):
    target = tmp_path / "planted"
    (tree / ".mblint_cache").mkdir()
    (tree / ".mblint_cache" / ".gitignore").symlink_to(target)
    result = invoke("check", "recipes")
    assert result.exit_code == 1 and "PK001" in result.stdout
    assert not target.exists()


def test_a_link_inside_the_cache_is_not_written_through(tree, tmp_path):
    from mblint import __version__

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tree / ".mblint_cache").mkdir()
    (tree / ".mblint_cache" / __version__).symlink_to(elsewhere)
    invoke("check", "recipes")
    assert cache_files(elsewhere) == []


def entries(tree: Path) -> list[Path]:
    return [p for p in (tree / ".mblint_cache").rglob("*.json") if p.name != "plugins.json"]


@pytest.mark.parametrize("damage", [
    lambda e: e["result"]["findings"][0].__setitem__(2, 99),  # the severity (mblint.findings.PARTS)
    lambda e: e.update(deps=["not", "a", "mapping"]),
    lambda e: e["result"]["findings"][0][4].__setitem__(1, "one"),  # the location's line
    lambda e: e["result"].update(findings="nope"),
    "deep",
], ids=["severity 99", "deps list", "line not a number", "findings not a list", "100,000-deep array"])
def test_a_damaged_cache_entry_is_ignored_and_rewritten(tree, damage):
    first = invoke("check", "recipes")
    assert first.exit_code == 1
    for entry in entries(tree):
        data = json.loads(entry.read_text())
        if damage == "deep":
            entry.write_text("[" * 100_000 + "]" * 100_000)
        elif data["result"]["findings"]:
            damage(data)
            entry.write_text(json.dumps(data))
    again = invoke("check", "recipes")
    assert again.exit_code == 1 and again.stdout == first.stdout and again.stderr == first.stderr  # notes only
    assert all(json.loads(entry.read_text()).get("settings") for entry in entries(tree))  # rewritten


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_cache_files_that_are_not_regular_files_are_never_waited_on(tree, kind):
    first = invoke("check", "recipes")
    targets = entries(tree) + list((tree / ".mblint_cache").rglob("plugins.json"))
    assert targets
    for target in targets:
        target.unlink()
        os.mkfifo(target) if kind == "fifo" else target.symlink_to(kind)
    again = invoke("check", "recipes")
    assert again.stdout == first.stdout and again.exit_code == 1


# ----- bounded work ---------------------------------------------------------------------------


def unknown_branches_recipe(count: int) -> str:
    lines = ["import os", "from megatron.bridge.training.config import ConfigContainer", "",
             "from .common import _sft_common", "", "", "def branches_recipe() -> ConfigContainer:",
             "    cfg = _sft_common()"]
    for index in range(count):
        lines += [f'    if os.environ.get("X{index}"):', f"        cfg.train.train_iters = {index}"]
    return "\n".join(lines + ["    cfg.train.micro_batch_size = 2", "    return cfg", ""])


def run_mblint(args: list[str], cwd: Path, timeout: float, memory: int | None = None):
    """``mblint`` in a process of its own, killed after ``timeout`` seconds; ``memory``: an
    address-space limit in bytes."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        if memory is not None:
            resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    return subprocess.run([sys.executable, "-c", "from mblint.cli import run; run()", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=limit)


def test_sequential_unknown_branches_stay_linear(tree):
    # 2,000 `if <unknown>:` statements setting one field: cubic before (1,000 took 45 s, 2,000
    # ran past 120 s); each merge now keeps at most MAX_ORIGINS origins (about 1 s).
    (tree / "recipes" / "branches.py").write_text(unknown_branches_recipe(2_000))
    result = run_mblint(["check", "--no-cache", "--format", "json", "recipes"], tree, timeout=60)
    found = {(f["rule"], f["location"]["path"]) for f in json.loads(result.stdout)["findings"]}
    assert ("PK001", "recipes/branches.py") in found and ("PK001", "recipes/good.py") in found


def test_an_over_size_python_file_is_never_read(tree):
    huge = tree / "recipes" / "huge.py"
    with open(huge, "wb") as handle:  # sparse: 1.5 GB that take no disk
        handle.truncate(1_500_000_000)
    result = run_mblint(["check", "--no-cache", "--format", "json", "recipes"], tree, timeout=60,
                        memory=1_000_000_000)
    found = {(f["rule"], f["location"]["path"]) for f in json.loads(result.stdout)["findings"]}
    assert ("SY002", "recipes/huge.py") in found and ("PK001", "recipes/good.py") in found, result.stderr


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_baseline_that_is_not_a_regular_file_is_a_clear_error(tree, kind):
    def plant(path: Path) -> None:
        path.unlink(missing_ok=True)
        os.mkfifo(path) if kind == "fifo" else path.symlink_to(kind)

    plant(tree / "baseline.json")
    result = run_mblint(["check", "--no-cache", "--baseline", "baseline.json", "recipes"], tree, timeout=30)
    assert result.returncode == 2 and "baseline.json: malformed baseline: not a regular file" in result.stderr


# ----- clear errors ---------------------------------------------------------------------------


@pytest.mark.parametrize("settings, message", [
    (b"[tool.mblint]\nselect = " + b"[" * 10_000 + b"]" * 10_000 + b"\n", "invalid TOML: nested too deeply"),
    (b"[tool.mblint]\nselect = ['PK\xff']\n", "cannot read settings: not UTF-8 (byte 27)"),
], ids=["select nested 10,000 deep", "byte not UTF-8"])
def test_malformed_settings_are_clear_errors(tree, settings, message):
    (tree / "pyproject.toml").write_bytes(settings)
    result = check("recipes")
    assert result.exit_code == 2 and f"pyproject.toml: {message}" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("document, message", [
    ('{"mblint-baseline": 1, "entries": [{"path": "recipes/good.py", "rule": "PK001", "count": Infinity}]}',
     "malformed baseline: Infinity is not a JSON number"),
    ('{"mblint-baseline": 1, "entries": [{"path": "recipes/good.py", "rule": "PK001", "count": 1e999}]}',
     "malformed baseline: count inf is not a whole number"),
    ("[" * 100_000 + "]" * 100_000, "malformed baseline: nested too deeply"),
    ('{"mblint-baseline": 1, "entries": {"path": "recipes/good.py"}}',
     "malformed baseline: 'entries' must be a list of objects"),
    ('{"mblint-baseline": 1, "entries": ["recipes/good.py"]}', "malformed baseline: 'entries' must be a list of objects"),
], ids=["Infinity", "1e999", "100,000 deep", "entries a mapping", "entries of strings"])
def test_malformed_baselines_are_clear_errors(tree, document, message):
    (tree / "baseline.json").write_text(document)
    result = check("--baseline", "baseline.json", "recipes")
    assert result.exit_code == 2 and f"baseline.json: {message}" in result.stderr


def test_an_unwritable_baseline_path_is_a_clear_error(tree):
    result = check("--write-baseline", "recipes/good.py/baseline.json", "recipes")  # a file as the folder
    assert result.exit_code == 2 and "baseline.json: cannot write baseline: Not a directory" in result.stderr
    assert "Traceback" not in result.output


@pytest.mark.parametrize("document, expected", [
    ("base: &b\n  micro_batch_size: 1\ntrain:\n  <<: *b\n", "merged"),
    ("a: &a {micro_batch_size: 1}\nb: &b {global_batch_size: 8}\ntrain:\n  <<: [*a, *b]\n", "merged"),
    ("train: !!omap\n  - micro_batch_size: 1\n", "merged"),
    ("train:\n  micro_batch_size: !!value 1\n", "merged"),
    ("train:\n  micro_batch_size: 2\n  global_batch_size: !!binary aGk=\n", "PK001"),
], ids=["merge key", "merge list", "omap", "value", "binary"])
def test_core_schema_yaml_constructs_are_applied_or_reported(tree, document, expected):
    (tree / "o.yaml").write_text(PAIRED + document)
    result = check("--format", "json", "o.yaml")
    assert "internal error" not in result.output and result.exit_code in (0, 1), result.output
    rules = {f["rule"] for f in findings(result)}
    if expected == "merged":  # micro_batch_size 1 reached the recipe: PK001 no longer fires
        assert "PK001" not in rules
    else:
        assert "PK001" in rules


def test_an_integer_beyond_python_s_digit_limit_is_sy001(tree):
    (tree / "o.yaml").write_text(PAIRED + "train:\n  micro_batch_size: " + "1" * 5_000 + "\n")
    result = check("--format", "json", ".")
    assert "internal error" not in result.output
    assert [f["rule"] for f in findings(result) if f["location"]["path"] == "o.yaml"] == ["SY001"]
    assert "recipes/good.py" in {f["location"]["path"] for f in findings(result)}


def test_a_huge_hex_integer_keeps_the_run_failing(tree):
    (tree / "o.yaml").write_text(PAIRED + "train:\n  global_batch_size: 0x" + "f" * 5_000 + "\n")
    result = check("--format", "json", "o.yaml")
    assert result.exit_code == 1 and "internal error" not in result.output
    assert "PK001" in {f["rule"] for f in findings(result)}  # micro_batch_size 2 is still an error


def test_a_rule_that_crashes_makes_the_run_fail(tree, monkeypatch):
    from mblint.plugins import load_plugins

    rule = next(r for r in load_plugins().rules if r.id == "PK001")
    monkeypatch.setattr(rule, "check", lambda self, cfg, ctx: 1 / 0)
    result = check("recipes")
    assert result.exit_code == 2 and "internal error in rule PK001" in result.stderr
    assert "All checks passed" not in result.output


def test_sarif_uri_of_a_file_name_that_is_not_utf8(tree):
    name = os.fsdecode(b"bad\xff.py")
    shutil.copyfile(tree / "recipes" / "good.py", tree / "recipes" / name)
    result = check("--format", "sarif", "recipes")
    assert result.exit_code == 1, result.output
    uris = {location["physicalLocation"]["artifactLocation"]["uri"]
            for run in json.loads(result.stdout)["runs"] for r in run["results"] for location in r["locations"]}
    assert "recipes/bad%FF.py" in uris


@pytest.mark.parametrize("data", [
    PAIRED.encode() + b"train:\n  micro_batch_size: 1\x00\n",
    PAIRED.encode() + b"train:\n  micro_batch_size: 1  # caf\xe9\n",
    (PAIRED + "train:\n  micro_batch_size: 1\n").encode("utf-16"),
], ids=["NUL", "Latin-1", "UTF-16"])
def test_a_paired_yaml_file_that_is_not_utf8_text_is_sy001(tree, data):
    (tree / "o.yaml").write_bytes(data)
    result = check("--format", "json", "o.yaml")
    assert result.exit_code == 1 and [f["rule"] for f in findings(result)] == ["SY001"]


@pytest.mark.parametrize("separator", ["\u2028", "\x0c", "\x1c", "\x85"])
def test_the_snippet_is_the_line_reported_after_unusual_line_breaks(tree, separator):
    text = (tree / "recipes" / "good.py").read_text()
    text = text.replace("from .common import", f"# a comment with a{separator}break\nfrom .common import")
    (tree / "recipes" / "good.py").write_text(text)
    result = check("recipes/good.py")
    assert "recipes/good.py:11:5: PK001" in result.stdout
    assert "11 |     cfg.train.micro_batch_size = 2  # PK001: offline packing needs 1" in result.stdout



def test_python_m_mblint_does_not_import_the_linted_tree(tree):
    import subprocess
    import sys

    for name in ("click", "json", "ruamel"):  # modules mblint imports
        (tree / f"{name}.py").write_text(f"open({str(tree / 'pwned')!r}, 'a').write('{name}\\n')\n")
    for command in (["-m", "mblint"], ["-P", "-m", "mblint"]) if sys.version_info >= (3, 11) else (["-m", "mblint"],):
        result = subprocess.run([sys.executable, *command, "check", "--no-cache", "recipes"], cwd=tree,
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 1 and "PK001" in result.stdout, result.stderr
    assert not (tree / "pwned").exists(), (tree / "pwned").read_text()


# ----- fixes never damage files ----------------------------------------------------------------


def fix(*args: str):
    # PK001 alone: these tests are about how files are written.
    return invoke("check", "--no-cache", "--select", "PK001", "--fix", "--unsafe-fixes", *args)


def test_fix_goes_through_a_link_inside_the_project_and_never_replaces_it(tree):
    target = tree / "recipes" / "good.py"
    link = tree / "recipes" / "link.py"
    link.symlink_to("good.py")
    result = fix("recipes/link.py")
    assert link.is_symlink() and os.readlink(link) == "good.py", result.output
    assert "micro_batch_size = 1" in target.read_text()


def test_fix_never_writes_through_a_link_to_outside_the_project(tree, tmp_path):
    outside = tmp_path / "outside.py"
    outside.write_text((tree / "recipes" / "good.py").read_text())
    before = outside.read_bytes()
    (tree / "recipes" / "out.py").symlink_to(outside)
    fix("recipes")
    assert (tree / "recipes" / "out.py").is_symlink() and outside.read_bytes() == before


def test_fix_never_breaks_a_hard_link(tree, tmp_path):
    other = tmp_path / "other_name.py"
    os.link(tree / "recipes" / "good.py", other)
    before = other.read_bytes()
    result = fix("recipes")
    assert "good.py: has 2 hard links, which replacing it would break; not fixed" in result.stderr
    assert os.stat(other).st_ino == os.stat(tree / "recipes" / "good.py").st_ino and other.read_bytes() == before
    assert "Fixed" not in result.stderr  # nothing was written


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_fix_keeps_owner_group_and_mode(tree):
    good = tree / "recipes" / "good.py"
    os.chown(good, 1234, 2345)
    os.chmod(good, 0o640)
    fix("recipes")
    info = os.stat(good)
    assert "micro_batch_size = 1" in good.read_text()
    assert (info.st_uid, info.st_gid, info.st_mode & 0o7777) == (1234, 2345, 0o640)


@pytest.mark.parametrize("ending", ["\r\n", "\r"], ids=["CRLF", "CR-only"])
def test_fix_is_byte_identical_outside_the_edit_for_every_line_ending(tree, ending):
    good = tree / "recipes" / "good.py"
    original = good.read_text()
    fix("recipes")
    fixed_lf = good.read_text()
    assert fixed_lf != original
    good.write_bytes(original.replace("\n", ending).encode())
    fix("recipes")
    assert good.read_bytes() == fixed_lf.replace("\n", ending).encode()


def test_fix_reports_only_what_was_written(tree, monkeypatch):
    import tempfile as tempfile_module

    shutil.copyfile(tree / "recipes" / "good.py", tree / "recipes" / "second.py")
    real_mkstemp = tempfile_module.mkstemp

    def refuse_good(*args, **kwargs):  # as a folder that cannot be written would
        if kwargs.get("prefix", "").startswith(".good.py."):
            raise PermissionError(13, "Permission denied")
        return real_mkstemp(*args, **kwargs)

    monkeypatch.setattr("mblint.fix.files.tempfile.mkstemp", refuse_good)
    result = fix("recipes")
    assert result.exit_code == 2 and "good.py: cannot write" in result.stderr
    assert "micro_batch_size = 1" in (tree / "recipes" / "second.py").read_text()
    assert "Fixed 1 finding with " in result.stderr and "in 1 file." in result.stderr, result.stderr


@pytest.mark.parametrize("gbs", [1, 3])
def test_pk001_never_proposes_an_invalid_or_inequivalent_global_batch(tree, gbs):
    """A global batch that the micro-batch size does not divide (1 or 3 with MBS 2) has no
    equivalent with a smaller global batch; PK001's fix (MBS 1) keeps it as it is."""
    good = tree / "recipes" / "good.py"
    good.write_text(good.read_text().replace("    return cfg", f"    cfg.train.global_batch_size = {gbs}\n    return cfg"))
    fix("recipes")
    text = good.read_text()
    assert "global_batch_size = 0" not in text and f"global_batch_size = {gbs}" in text
    assert "micro_batch_size = 1" in text and "micro_batch_size = 2" not in text


def test_a_committed_cache_with_forged_entries_hides_no_finding(tree):
    first = invoke("check", "recipes")
    assert first.exit_code == 1 and "PK001" in first.stdout
    for entry in entries(tree):  # forge: every entry says the file is clean
        data = json.loads(entry.read_text())
        data["result"]["findings"] = []
        entry.write_text(json.dumps(data))
    committed = tree.parent / "committed"  # as a checkout brings it: the same files, new folders
    shutil.copytree(tree / ".mblint_cache", committed)
    # moved aside, not deleted: its folders keep their inodes, so the new copy cannot reuse them
    (tree / ".mblint_cache").rename(tree.parent / "original-cache")
    shutil.copytree(committed, tree / ".mblint_cache")
    again = invoke("check", "recipes")
    assert again.exit_code == 1 and "PK001" in again.stdout
