"""Rule packs are pluggy plugins registered through the ``mblint`` entry-point group. The test
packs are installed into a temporary folder as a distribution (a ``.dist-info`` folder with
``entry_points.txt``, what an installer writes), which a fresh interpreter gets on its path."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import mblint_rules

FIXTURES = Path(__file__).parent.parent / "fixtures" / "plugins"
RECIPE = '''\
from megatron.bridge.training.config import ConfigContainer, TrainingConfig


def tiny_pretrain_config():
    cfg = ConfigContainer(train=TrainingConfig(micro_batch_size=1, global_batch_size=8))
    return cfg
'''
# Packs that cannot contribute, each for its own reason.
UNMARKED_PACK = "def mblint_rules():\n    return []\n"  # no @hookimpl: pluggy sees no hook
FAILING_PACK = ("from mblint.rulekit import hookimpl\n\n\n@hookimpl\ndef mblint_rules():\n"
                "    raise KeyError('a missing table')\n")


def install_distribution(site: Path, package: str, entry_point: str | None = None) -> None:
    """``package`` (already in ``site``) as an installed distribution with an entry point."""
    info = site / f"{package}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[mblint]\n{package} = {entry_point or package}\n")


def install_fixture(site: Path, package: str, source: Path) -> None:
    shutil.copytree(source / package, site / package)
    install_distribution(site, package)


def install_module(site: Path, package: str, text: str) -> None:
    (site / package).mkdir()
    (site / package / "__init__.py").write_text(text)
    install_distribution(site, package)


def run_mblint(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "mblint", *args], cwd=cwd, env=env, capture_output=True, text=True)


def test_a_pluggy_pack_contributes_its_rules_and_broken_packs_are_errors_naming_them(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install_fixture(site, "mblint_example_pack", FIXTURES / "example_pack")
    install_fixture(site, "mblint_broken_pack", FIXTURES / "broken_pack")
    install_module(site, "mblint_unmarked_pack", UNMARKED_PACK)
    install_module(site, "mblint_failing_pack", FAILING_PACK)
    (tmp_path / "recipe.py").write_text(RECIPE)

    listed = run_mblint(site, tmp_path, "rules")
    assert "EX001" in listed.stdout and "PK001" in listed.stdout
    errors = [line for line in listed.stderr.splitlines() if line.startswith("mblint: error: ")]
    assert sorted(errors) == [
        "mblint: error: rule pack 'mblint_broken_pack' (mblint_broken_pack) failed to load: "
        "RuntimeError: this rule pack is broken on purpose",
        "mblint: error: rule pack 'mblint_failing_pack' (mblint_failing_pack) failed: KeyError: 'a missing table'",
        "mblint: error: rule pack 'mblint_unmarked_pack' (mblint_unmarked_pack) implements no mblint hook: mark "
        "its mblint_rules function with @hookimpl (from mblint.rulekit import hookimpl)",
    ], listed.stderr
    assert listed.returncode == 2

    result = run_mblint(site, tmp_path, "check", "recipe.py", "--no-cache")
    assert "recipe.py:5:" in result.stdout and "EX001" in result.stdout
    assert "below this team's minimum of 16" in result.stdout
    assert "mblint_broken_pack" in result.stdout + result.stderr
    assert result.returncode == 2, "rules that could not be loaded did not check anything: no pass"


def test_without_the_pack_its_rule_is_absent(tmp_path):
    (tmp_path / "recipe.py").write_text(RECIPE)
    result = run_mblint(tmp_path, tmp_path, "check", "recipe.py", "--no-cache")
    assert "EX001" not in result.stdout
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_built_in_pack_is_registered_through_its_entry_point():
    from mblint.plugins import load_plugins

    loaded = load_plugins()
    assert not loaded.errors
    assert "builtin" in loaded.versions and "mblint_rules" in loaded.modules
    assert {rule.__module__.split(".")[0] for rule in loaded.rules} == {"mblint_rules"}
    assert len(loaded.rules) == len(mblint_rules.mblint_rules())


def test_the_built_in_pack_imports_only_the_rule_kit_from_mblint():
    """The built-in pack is written as a third-party pack would be: mblint.rulekit is its
    whole view of mblint."""
    imported = set()
    for path in Path(mblint_rules.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    assert {module for module in imported if module.split(".")[0] == "mblint"} == {"mblint.rulekit"}
    assert not {module for module in imported if module.split(".")[0] in ("rules", "mblint_rules")}


# A pack whose rule takes the id of a built-in rule.
DUPLICATE_ID_PACK = '''from mblint.rulekit import Rule, Severity, hookimpl


class MyPackedBatch(Rule):
    id = "PK001"
    name = "my-packed-batch"
    severity = Severity.INFO
    summary = "A second rule under a taken id."
    doc = "".join(f"## {section}\\nx\\n" for section in
                  ("What it does", "Why it matters", "Example", "Fix", "Versions", "Sources"))

    def check(self, cfg, ctx):
        yield ctx.report(cfg, "the second PK001 ran")


@hookimpl
def mblint_rules():
    return [MyPackedBatch]
'''


def test_a_rule_id_defined_twice_is_an_error_and_the_second_rule_is_skipped(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    install_module(site, "mblint_zz_duplicate_pack", DUPLICATE_ID_PACK)
    (tmp_path / "recipe.py").write_text(RECIPE)

    listed = run_mblint(site, tmp_path, "rules")
    errors = [line for line in listed.stderr.splitlines() if line.startswith("mblint: error: ")]
    assert errors == ["mblint: error: rule id PK001 is defined twice (OfflinePackingRequiresMbs1, MyPackedBatch); "
                      "the second is skipped"], listed.stderr
    assert listed.returncode == 2
    assert "my-packed-batch" not in listed.stdout and [line.split()[0] for line in listed.stdout.splitlines()
                                                       if line.startswith("PK001")] == ["PK001"]

    result = run_mblint(site, tmp_path, "check", "recipe.py", "--no-cache")
    assert "the second PK001 ran" not in result.stdout and result.returncode == 2
