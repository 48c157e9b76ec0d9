"""The schema follows the Megatron-Bridge at hand: its version read from the source (never
imported), a schema derived from a source tree the bundled releases do not describe, the
nearest bundled release with one notice when nothing says which version, and the version and
schema source in every report format. The source trees here are written for the tests."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from mblint.engine import CheckOptions, Engine
from mblint.report import json_format, sarif, text
from mblint.schema import bundled_releases, load_schema, nearest_release
from mblint.schema.derive import DeriveError, derive_schema
from mblint.schema.source import bridge_version, find_bridge_source

CONFIG = """
    from dataclasses import dataclass, field
    from typing import Optional


    @dataclass(kw_only=True)
    class TrainingConfig:
        micro_batch_size: Optional[int] = None
        global_batch_size: Optional[int] = None
        train_iters: Optional[int] = None
        warp_drive_factor: int = 1


    @dataclass(kw_only=True)
    class ConfigContainer:
        train: TrainingConfig = field(default_factory=TrainingConfig)
    """
RECIPE = """
    from megatron.bridge.training.config import ConfigContainer, TrainingConfig


    def warp_pretrain_config() -> ConfigContainer:
        cfg = ConfigContainer(train=TrainingConfig(micro_batch_size=1, global_batch_size=8, train_iters=10))
        cfg.train.warp_drive_factor = 4
        return cfg
    """
PACKAGE_INFO = 'MAJOR = 0\nMINOR = 9\nPATCH = 0\nPRE_RELEASE = "rc1"\n'


def write(root: Path, files: dict[str, str]) -> Path:
    for relative, content in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(content), encoding="utf-8")
    return root


@pytest.fixture()
def checkout(tmp_path) -> Path:
    """A Megatron-Bridge 0.9.0rc1 checkout whose TrainingConfig has a field no release has."""
    return write(tmp_path / "checkout", {
        "src/megatron/__init__.py": "",
        "src/megatron/bridge/__init__.py": "",
        "src/megatron/bridge/package_info.py": PACKAGE_INFO,
        "src/megatron/bridge/training/__init__.py": "",
        "src/megatron/bridge/training/config.py": CONFIG,
        "src/megatron/bridge/recipes/__init__.py": "",
        "src/megatron/bridge/recipes/warp.py": RECIPE,
    })


def run(paths: list[Path], cwd: Path, monkeypatch, **options):
    monkeypatch.chdir(cwd)
    return Engine(CheckOptions(jobs=1, **options)).check_paths([str(p) for p in paths])


def test_version_from_package_info_and_metadata(tmp_path):
    write(tmp_path / "a", {"megatron/bridge/__init__.py": "", "megatron/bridge/package_info.py": PACKAGE_INFO})
    assert bridge_version(tmp_path / "a") == "0.9.0rc1"
    write(tmp_path / "b", {"megatron/bridge/__init__.py": "",
                           "megatron_bridge-0.5.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: megatron-bridge\n"
                                                                       "Version: 0.5.1\n"})
    source = find_bridge_source([tmp_path / "nothing", tmp_path / "b"])
    assert source.root == tmp_path / "b" and source.version == "0.5.1"
    assert not source.has_config  # no training/config.py: nothing to derive from
    assert find_bridge_source([tmp_path]) is None


def test_nearest_bundled_release():
    releases = list(bundled_releases())
    assert releases == ["0.3.0", "0.3.1", "0.4.0", "0.4.1", "0.4.2", "0.5.0", "0.5.1", "0.6.0", "0.6.2"]
    assert nearest_release("0.5.1") == "0.5.1"
    assert nearest_release("0.6") == "0.6.2"
    assert nearest_release("0.6.1") == "0.6.0"
    assert nearest_release("0.7.0") == "0.6.2"
    assert nearest_release("0.2.1") == "0.3.0"


def test_derived_schema_knows_a_new_field_the_bundled_one_does_not(checkout, monkeypatch, tmp_path):
    recipe = checkout / "src/megatron/bridge/recipes/warp.py"
    derived = run([recipe], checkout, monkeypatch, cache_dir=tmp_path / "cache")
    bundled = run([recipe], checkout, monkeypatch, cache_dir=tmp_path / "cache", schema_source="bundled")
    assert derived.resolved == bundled.resolved == 1
    assert [f.rule_id for f in derived.findings if f.rule_id != "CV003"] == []  # CV003: no world size
    assert [(f.rule_id, f.location.line) for f in bundled.findings] == [("OT001", 7)]  # cfg.train.warp_drive_factor = 4
    assert "warp_drive_factor" in bundled.findings[0].message
    [schema] = derived.schemas
    assert schema["megatron_bridge_version"] == "0.9.0rc1"
    assert schema["source"] == f"derived from {(checkout / 'src/megatron/bridge').resolve()}"
    assert schema["note"] is None
    [fallback] = bundled.schemas
    assert fallback["source"] == "bundled" and fallback["megatron_bridge_version"] == "0.6.2"
    assert bundled.notes == ["Megatron-Bridge 0.9.0rc1 has no bundled schema and the schema source is set to "
                             "bundled; linting against the nearest bundled release, 0.6.2"]


def test_derived_schema_is_cached_by_content(checkout, tmp_path):
    source = find_bridge_source([checkout / "src"])
    first = derive_schema(source, load_schema("0.6.2"), cache_dir=tmp_path / "cache")
    assert [p.name.endswith(".json.gz") for p in (tmp_path / "cache").iterdir()] == [True]
    assert first.has_field("TrainingConfig", "warp_drive_factor")
    config = checkout / "src/megatron/bridge/training/config.py"
    config.write_text(config.read_text().replace("warp_drive_factor", "impulse_factor"))
    second = derive_schema(source, load_schema("0.6.2"), cache_dir=tmp_path / "cache")
    assert second.key != first.key
    assert second.has_field("TrainingConfig", "impulse_factor")
    assert not second.has_field("TrainingConfig", "warp_drive_factor")
    assert len(list((tmp_path / "cache").iterdir())) == 2


def test_underivable_source_falls_back_with_a_note(tmp_path, monkeypatch):
    root = write(tmp_path / "broken", {
        "megatron/__init__.py": "", "megatron/bridge/__init__.py": "",
        "megatron/bridge/package_info.py": "MAJOR = 0\nMINOR = 5\nPATCH = 1\n",
        "megatron/bridge/training/config.py": "class Other:\n    pass\n",
        "recipe.py": "def x_config():\n    return None\n",
    })
    with pytest.raises(DeriveError):
        derive_schema(find_bridge_source([root]), load_schema("0.5.1"))
    report = run([root / "recipe.py"], root, monkeypatch, cache_dir=tmp_path / "cache")
    [schema] = report.schemas
    assert schema["source"] == "bundled" and schema["megatron_bridge_version"] == "0.5.1"
    assert "no schema derived from this Megatron-Bridge source" in schema["note"]


def test_unknown_version_without_source_gives_one_notice(tmp_path, monkeypatch):
    folder = write(tmp_path / "recipes", {
        "a.py": "def a_config():\n    return None\n",
        "b.py": "def b_config():\n    return None\n",
    })
    report = run([folder / "a.py", folder / "b.py"], folder, monkeypatch, use_cache=False)
    notices = [note for note in report.notes if "version unknown" in note]
    assert len(notices) == 1
    assert "nearest bundled schema, 0.6.2" in notices[0]
    pinned = run([folder / "a.py"], folder, monkeypatch, version="0.4.1")
    assert pinned.schemas == [{"megatron_bridge_version": "0.4.1", "source": "bundled",
                               "megatron_core_version": "0.17.0", "note": None}]
    assert not [note for note in pinned.notes if "version" in note]


def test_reports_name_version_and_schema_source(checkout, monkeypatch, tmp_path):
    report = run([checkout / "src/megatron/bridge/recipes/warp.py"], checkout, monkeypatch,
                 cache_dir=tmp_path / "cache")
    rendered = text.render(report, show_source=False)
    assert "Linted against Megatron-Bridge 0.9.0rc1 (derived from " in rendered
    document = json.loads(json_format.render(report))
    assert document["schemas"][0]["megatron_bridge_version"] == "0.9.0rc1"
    log = json.loads(sarif.render(report, root=checkout, display_root=checkout))
    properties = log["runs"][0]["properties"]["megatronBridgeSchemas"]
    assert properties[0]["megatron_bridge_version"] == "0.9.0rc1"
    assert properties[0]["source"].startswith("derived from ")


def test_hostile_source_trees_are_bounded(tmp_path, monkeypatch):
    """Class bases that loop fall back to the bundled schema with a note; defaults that would be
    huge integers stay unknown; either way the run finishes at once."""
    config = """
        from dataclasses import dataclass, field
        from megatron.bridge.training.loop import Loop


        @dataclass
        class TrainingConfig(Loop):
            micro_batch_size: int = 10 ** 200 ** 200 ** 200
            global_batch_size: int = 2 ** 63 * 2 ** 63 * 2 ** 63 * 2 ** 63 * 2 ** 63


        @dataclass
        class ConfigContainer:
            train: TrainingConfig = field(default_factory=TrainingConfig)
        """
    files = {"megatron/__init__.py": "", "megatron/bridge/__init__.py": "",
             "megatron/bridge/training/__init__.py": "", "megatron/bridge/training/config.py": config,
             "megatron/bridge/training/loop.py": "from dataclasses import dataclass\n\n\n@dataclass\nclass Loop:\n"
                                                 "    spin: int = 1\n"}
    plain = write(tmp_path / "plain", files)
    schema = derive_schema(find_bridge_source([plain]), load_schema("0.6.2"))
    fields = schema.find_class("TrainingConfig").fields
    assert fields["micro_batch_size"].default_kind == "unknown"
    assert fields["global_batch_size"].default_kind == "unknown"
    assert fields["spin"].default == 1
    looping = write(tmp_path / "looping", {**files, "megatron/bridge/training/loop.py":
                                           "from dataclasses import dataclass\n"
                                           "from megatron.bridge.training.config import TrainingConfig\n\n\n"
                                           "@dataclass\nclass Loop(TrainingConfig):\n    spin: int = 1\n",
                                           "r.py": "def r_config():\n    return None\n"})
    with pytest.raises(DeriveError):
        derive_schema(find_bridge_source([looping]), load_schema("0.6.2"))
    report = run([looping / "r.py"], looping, monkeypatch, cache_dir=tmp_path / "cache")
    assert report.schemas[0]["source"] == "bundled"
    assert "no schema derived from this Megatron-Bridge source (RecursionError" in report.schemas[0]["note"]


def test_a_copied_cache_folder_is_not_read(tmp_path):
    """A schema cache that came with a checkout (copied, so a new folder inode) is never read:
    a forged schema in it cannot silence rules."""
    import shutil

    from mblint.schema.derive import _cache_file

    mine = tmp_path / "mine" / "0.0" / "schema"
    mine.mkdir(parents=True)
    shutil.copytree(tmp_path / "mine", tmp_path / "committed")
    assert _cache_file(mine, "abc") is not None
    assert _cache_file(tmp_path / "committed" / "0.0" / "schema", "abc").name != _cache_file(mine, "abc").name
    assert _cache_file(tmp_path / "nowhere" / "schema", "abc") is None
