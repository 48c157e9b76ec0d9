"""The plugin catalog: a run whose files are all cached takes the rules' metadata from it
instead of importing the rule packs; anything the catalog was built from changing (a rule
pack's file, a new module in it, a package installed) makes the next run load them again."""

from __future__ import annotations

import importlib
import shutil
import sys
import time

import pytest

from mblint import cache, catalog, plugins
from mblint.engine import CheckOptions, Engine
from tests.test_cache import make_project, run
from tests.test_plugins import FIXTURES, RECIPE, install_fixture, run_mblint

PACK = "mblint_example_pack"


@pytest.fixture
def settled(monkeypatch):
    """Files written so far count as old enough to be catalogued (see cache.RACY_WINDOW_NS)."""

    def settle() -> None:
        time.sleep(0.05)
        monkeypatch.setattr(cache, "RACY_WINDOW_NS", 0)

    return settle


@pytest.fixture
def example_pack(tmp_path, monkeypatch):
    site = tmp_path / "site"
    site.mkdir()
    shutil.copytree(FIXTURES / "example_pack" / PACK, site / PACK)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, PACK, raising=False)
    module = importlib.import_module(PACK)
    yield site / PACK, plugins.LoadedPlugins(rules=module.team_rules(), versions={PACK: "1.0"}, modules=[PACK])
    sys.modules.pop(PACK, None)


def test_a_fully_cached_run_takes_the_rules_from_the_catalog(tmp_path, monkeypatch, settled):
    recipe = make_project(tmp_path, mbs=2)
    settled()
    first = run(tmp_path, recipe)

    def no_loading(*args, **kwargs):
        raise AssertionError("the rule packs were loaded")

    monkeypatch.setattr(plugins, "load_plugins", no_loading)
    engine = Engine(CheckOptions(select=("PK001",), use_cache=True, cache_root=tmp_path))
    engine.display_root = tmp_path
    second = engine.check_paths([str(recipe)])
    assert engine.rule_run.catalogued and second.cache_hits == 1
    assert [f.rule_id for f in second.findings] == [f.rule_id for f in first.findings] == ["PK001"]
    assert [r.id for r in second.rules] == [r.id for r in first.rules]


def test_a_file_to_check_loads_the_real_rule_classes(tmp_path, settled):
    recipe = make_project(tmp_path, mbs=2)
    settled()
    run(tmp_path, recipe)
    (tmp_path / "proj" / "common.py").write_text((tmp_path / "proj" / "common.py").read_text() + "\n")
    engine = Engine(CheckOptions(select=("PK001",), use_cache=True, cache_root=tmp_path))
    engine.display_root = tmp_path
    report = engine.check_paths([str(recipe)])
    assert not engine.rule_run.catalogued and report.cache_hits == 0
    assert [f.rule_id for f in report.findings] == ["PK001"]


def test_a_file_to_check_imports_the_packs_the_catalog_names_without_scanning_the_installed_ones(
        tmp_path, monkeypatch, settled):
    recipe = make_project(tmp_path, mbs=2)
    settled()
    run(tmp_path, recipe)

    def no_scan():
        raise AssertionError("the installed distributions were scanned for rule packs")

    monkeypatch.setattr(plugins, "installed_packs", no_scan)
    (tmp_path / "proj" / "common.py").write_text((tmp_path / "proj" / "common.py").read_text() + "\n")
    engine = Engine(CheckOptions(select=("PK001",), use_cache=True, cache_root=tmp_path))
    engine.display_root = tmp_path
    report = engine.check_paths([str(recipe)])
    assert not engine.rule_run.catalogued and report.cache_hits == 0 and not report.errors
    assert [f.rule_id for f in report.findings] == ["PK001"]
    monkeypatch.undo()
    assert engine.rule_run.plugins.versions == plugins.load_plugins().versions


def test_the_catalog_keeps_the_rule_metadata(tmp_path, example_pack, settled):
    _, loaded = example_pack
    settled()
    catalog.save_catalog(tmp_path, loaded, "fingerprint")
    again = catalog.load_catalog(tmp_path)
    assert again is not None and again.fingerprint == "fingerprint" and again.versions == {PACK: "1.0"}
    (real,), (stand_in,) = loaded.rules, again.rules
    for attribute in (*catalog.RULE_ATTRIBUTES, "severity"):
        assert getattr(stand_in, attribute) == getattr(real, attribute)
    assert stand_in.applies_to("0.6") == real.applies_to("0.6")


def test_a_changed_rule_file_drops_the_catalog(tmp_path, example_pack, settled):
    package, loaded = example_pack
    settled()
    catalog.save_catalog(tmp_path, loaded, "fingerprint")
    source = package / "__init__.py"
    source.write_text(source.read_text().replace("below 16", "below 32"))
    assert catalog.load_catalog(tmp_path) is None


def test_a_new_module_in_a_rule_pack_drops_the_catalog(tmp_path, example_pack, settled):
    package, loaded = example_pack
    settled()
    catalog.save_catalog(tmp_path, loaded, "fingerprint")
    (package / "more_rules.py").write_text("")
    assert catalog.load_catalog(tmp_path) is None


def test_recently_changed_rule_files_are_not_catalogued(tmp_path, example_pack):
    _, loaded = example_pack  # just copied: within the racy window
    catalog.save_catalog(tmp_path, loaded, "fingerprint")
    assert catalog.load_catalog(tmp_path) is None


def test_a_pack_that_failed_to_load_is_not_catalogued(tmp_path, example_pack, settled):
    _, loaded = example_pack
    settled()
    loaded.errors.append("plugin 'x' failed to load")
    catalog.save_catalog(tmp_path, loaded, "fingerprint")
    assert catalog.load_catalog(tmp_path) is None


def test_installing_a_pack_between_cached_runs_brings_its_rule_in(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "recipe.py").write_text(RECIPE)
    before = run_mblint(site, tmp_path, "check", "recipe.py")
    assert "EX001" not in before.stdout, before.stderr
    install_fixture(site, PACK, FIXTURES / "example_pack")
    after = run_mblint(site, tmp_path, "check", "recipe.py")
    assert "EX001" in after.stdout, after.stderr


def test_a_catalog_that_came_with_a_checkout_is_not_believed(tmp_path, settled):
    """A committed cache folder holding a forged catalog (no rule, or packs to import) would
    hide every finding: only the folder that wrote a catalog reads it."""
    recipe = make_project(tmp_path, mbs=2)
    settled()
    run(tmp_path, recipe)
    [written] = (tmp_path / ".mblint_cache").glob("*/plugins.json")
    assert catalog.load_catalog(written.parent) is not None
    copied = tmp_path / "copied"
    shutil.copytree(tmp_path / ".mblint_cache", copied)  # as a checkout brings it: new folders
    assert catalog.load_catalog(copied / written.parent.name) is None
