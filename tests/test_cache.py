"""The result cache: hits when nothing changed, misses when the file or a module it reads
changed, never used with --no-cache, and harmless when entries are corrupt."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from mblint import cache
from mblint.engine import CheckOptions, Engine

COMMON = '''\
from megatron.bridge.training.config import ConfigContainer, TrainingConfig
from megatron.bridge.data.builders import GPTSFTDatasetConfig
from megatron.bridge.data.packing import PackedSequenceSpecs

MBS = {mbs}


def _base():
    return ConfigContainer(
        train=TrainingConfig(micro_batch_size=MBS, global_batch_size=8),
        dataset=GPTSFTDatasetConfig(seq_length=2048, enable_offline_packing=True,
                                    offline_packing_specs=PackedSequenceSpecs(packed_sequence_size=2048)),
    )
'''
RECIPE = '''\
from proj.common import _base


def tiny_sft_config():
    cfg = _base()
    return cfg
'''


def make_project(root: Path, mbs: int) -> Path:
    package = root / "proj"
    package.mkdir(parents=True, exist_ok=True)
    (package / "__init__.py").write_text("")
    (package / "common.py").write_text(COMMON.format(mbs=mbs))
    (package / "recipe.py").write_text(RECIPE)
    (root / "pyproject.toml").write_text("[project]\nname = 'proj'\n")
    return package / "recipe.py"


def result_entries(root: Path) -> list[Path]:
    """The per-file result entries (the plugin catalog sits beside them)."""
    return list((root / ".mblint_cache").glob("*/*/*.json"))


def run(root: Path, recipe: Path, use_cache: bool = True):
    engine = Engine(CheckOptions(select=("PK001",), use_cache=use_cache, cache_root=root))
    engine.display_root = root
    return engine.check_paths([str(recipe)])


def test_second_run_is_served_from_the_cache(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    first = run(tmp_path, recipe)
    second = run(tmp_path, recipe)
    assert first.cache_hits == 0 and second.cache_hits == 1
    assert [f.rule_id for f in second.findings] == ["PK001"] == [f.rule_id for f in first.findings]
    assert second.findings[0].location == first.findings[0].location


def test_a_change_in_an_imported_base_builder_invalidates_the_recipe(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    assert [f.rule_id for f in run(tmp_path, recipe).findings] == ["PK001"]
    (tmp_path / "proj" / "common.py").write_text(COMMON.format(mbs=1))
    after = run(tmp_path, recipe)
    assert after.cache_hits == 0
    assert after.findings == []


def test_no_cache_neither_reads_nor_writes(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    run(tmp_path, recipe, use_cache=False)
    assert not (tmp_path / ".mblint_cache").exists()
    run(tmp_path, recipe)
    again = run(tmp_path, recipe, use_cache=False)
    assert again.cache_hits == 0


def test_corrupt_entries_are_ignored(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    run(tmp_path, recipe)
    for entry in result_entries(tmp_path):
        entry.write_text("{not json")
    report = run(tmp_path, recipe)
    assert report.cache_hits == 0 and [f.rule_id for f in report.findings] == ["PK001"]


def test_concurrent_runs_leave_valid_entries(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    command = [sys.executable, "-m", "mblint", "check", str(recipe), "--select", "PK001"]
    processes = [subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                 for _ in range(4)]
    assert [p.wait() for p in processes] == [1, 1, 1, 1]
    entries = result_entries(tmp_path)
    assert entries and all(json.loads(e.read_text())["result"]["findings"] for e in entries)
    assert not [p for p in (tmp_path / ".mblint_cache").rglob(".tmp-*")]
    assert os.path.exists(tmp_path / ".mblint_cache" / ".gitignore")


def _settle(monkeypatch) -> None:
    """Make the files written so far old enough to be recorded with a signature: without
    this, files changed within RACY_WINDOW_NS of a run are always hashed."""
    time.sleep(0.05)
    monkeypatch.setattr(cache, "RACY_WINDOW_NS", 0)


def _entries(root: Path) -> list[dict]:
    return [json.loads(e.read_text()) for e in result_entries(root)]


def test_unchanged_files_are_validated_by_stat_without_reading_them(tmp_path, monkeypatch):
    recipe = make_project(tmp_path, mbs=2)
    _settle(monkeypatch)
    run(tmp_path, recipe)
    assert all(signature is not None for entry in _entries(tmp_path) for digest, signature in entry["deps"].values()
               if digest != cache.ABSENT)

    def no_reading(*args, **kwargs):
        raise AssertionError("an unchanged dependency was hashed")

    monkeypatch.setattr(cache, "content_hash", no_reading)
    assert run(tmp_path, recipe).cache_hits == 1


def test_an_edit_keeping_size_and_restoring_mtime_is_detected(tmp_path, monkeypatch):
    recipe = make_project(tmp_path, mbs=2)
    common = tmp_path / "proj" / "common.py"
    _settle(monkeypatch)
    assert [f.rule_id for f in run(tmp_path, recipe).findings] == ["PK001"]
    before = os.stat(common)
    common.write_text(COMMON.format(mbs=1))  # same size: one digit for another
    os.utime(common, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = os.stat(common)
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    again = run(tmp_path, recipe)
    assert again.cache_hits == 0 and again.findings == []


def test_a_touched_but_unchanged_file_is_still_a_hit(tmp_path, monkeypatch):
    recipe = make_project(tmp_path, mbs=2)
    _settle(monkeypatch)
    run(tmp_path, recipe)
    (tmp_path / "proj" / "common.py").touch()
    assert run(tmp_path, recipe).cache_hits == 1


def test_recently_changed_files_get_no_signature_and_are_hashed(tmp_path, monkeypatch):
    recipe = make_project(tmp_path, mbs=2)  # files written just now: racy
    run(tmp_path, recipe)
    assert all(signature is None for entry in _entries(tmp_path) for _, signature in entry["deps"].values())
    hashed = []
    real_hash = cache.content_hash
    monkeypatch.setattr(cache, "content_hash", lambda path, memo=None: hashed.append(path) or real_hash(path, memo))
    assert run(tmp_path, recipe).cache_hits == 1
    assert hashed


def test_files_recent_when_recorded_are_signed_once_old_enough_and_no_longer_hashed(tmp_path, monkeypatch):
    recipe = make_project(tmp_path, mbs=2)  # files written just now: racy
    run(tmp_path, recipe)
    assert all(signature is None for entry in _entries(tmp_path) for _, signature in entry["deps"].values())
    _settle(monkeypatch)
    assert run(tmp_path, recipe).cache_hits == 1  # hashed once more, and signed
    assert all(signature is not None for entry in _entries(tmp_path) for digest, signature in entry["deps"].values()
               if digest != cache.ABSENT)

    def no_reading(*args, **kwargs):
        raise AssertionError("an unchanged dependency was hashed")

    monkeypatch.setattr(cache, "content_hash", no_reading)
    assert [f.rule_id for f in run(tmp_path, recipe).findings] == ["PK001"]


def test_entries_in_the_older_digest_only_format_are_still_read(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    run(tmp_path, recipe)
    for path in result_entries(tmp_path):
        entry = json.loads(path.read_text())
        entry["deps"] = {dep: digest for dep, (digest, _) in entry["deps"].items()}
        path.write_text(json.dumps(entry))
    assert run(tmp_path, recipe).cache_hits == 1


def test_cached_files_that_never_mention_mblint_are_not_read_for_suppressions(tmp_path, monkeypatch):
    from mblint import suppress

    recipe = make_project(tmp_path, mbs=2)
    run(tmp_path, recipe)
    read: list[str] = []
    real = suppress.parse_directives
    monkeypatch.setattr(suppress, "parse_directives", lambda path, aliases: read.append(path.name) or real(path, aliases))
    warm = run(tmp_path, recipe)
    assert warm.cache_hits == 1 and [f.rule_id for f in warm.findings] == ["PK001"]
    assert read == []


def test_a_suppression_still_applies_to_a_cached_result(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    [finding] = run(tmp_path, recipe).findings
    target = tmp_path / finding.location.path
    lines = target.read_text().splitlines()
    lines[finding.location.line - 1] += "  # mblint: ignore[PK001] packed elsewhere"
    target.write_text("\n".join(lines) + "\n")
    first = run(tmp_path, recipe)
    warm = run(tmp_path, recipe)
    assert first.findings == [] and first.suppressed == 1
    assert warm.cache_hits == 1 and warm.findings == [] and warm.suppressed == 1


def test_clean_removes_the_caches_here_and_below_and_nothing_else(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    command = [sys.executable, "-m", "mblint", "check", str(recipe), "--select", "PK001"]
    clean = [sys.executable, "-m", "mblint", "clean"]
    assert subprocess.run(command, cwd=tmp_path, capture_output=True).returncode == 1
    assert result_entries(tmp_path)  # the check run wrote its cache at the project root
    nested = tmp_path / "proj" / "vendored" / ".mblint_cache"
    nested.mkdir(parents=True)
    in_git = tmp_path / ".git" / "modules" / ".mblint_cache"
    in_git.mkdir(parents=True)
    outside = tmp_path.parent / f"{tmp_path.name}-outside" / ".mblint_cache"
    outside.mkdir(parents=True)
    (outside / "entry.json").write_text("{}")
    link = tmp_path / "proj" / "linked" / ".mblint_cache"
    link.parent.mkdir()
    link.symlink_to(outside, target_is_directory=True)

    cleaned = subprocess.run(clean, cwd=tmp_path, capture_output=True, text=True)
    assert cleaned.returncode == 0, cleaned.stderr
    assert sorted(cleaned.stdout.splitlines()) == sorted(
        f"Removed {folder}" for folder in (tmp_path / ".mblint_cache", nested, link))
    assert not (tmp_path / ".mblint_cache").exists() and not nested.exists() and not os.path.lexists(link)
    assert in_git.is_dir()  # the walk does not enter .git
    assert (outside / "entry.json").read_text() == "{}"  # a link is removed, never its target

    again = subprocess.run(clean, cwd=tmp_path, capture_output=True, text=True)
    assert (again.returncode, again.stdout) == (0, "")

    # Run in a subfolder, clean also removes the cache a check run there uses: the project root's.
    assert subprocess.run(command, cwd=tmp_path / "proj", capture_output=True).returncode == 1
    assert result_entries(tmp_path)
    below = subprocess.run(clean, cwd=tmp_path / "proj", capture_output=True, text=True)
    assert (below.returncode, below.stdout) == (0, f"Removed {tmp_path / '.mblint_cache'}\n")


def test_remove_cache_folder_refuses_other_folders(tmp_path):
    import pytest

    other = tmp_path / "results"
    other.mkdir()
    with pytest.raises(ValueError):
        cache.remove_cache_folder(other)
    assert other.is_dir()


def test_cache_dir_moves_the_cache_and_clean_removes_only_a_cache(tmp_path):
    recipe = make_project(tmp_path, mbs=2)
    elsewhere = tmp_path.parent / f"{tmp_path.name}-cache"
    engine_runs = [Engine(CheckOptions(select=("PK001",), use_cache=True, cache_root=tmp_path, cache_dir=elsewhere))
                   for _ in range(2)]
    reports = [engine.check_paths([str(recipe)]) for engine in engine_runs]
    assert [r.cache_hits for r in reports] == [0, 1]
    assert not (tmp_path / ".mblint_cache").exists()
    assert list(elsewhere.glob("*/*/*.json")) and (elsewhere / ".gitignore").read_text() == cache.GITIGNORE_TEXT

    # The environment variable names it too, for check and for clean.
    env = {**os.environ, "MBLINT_CACHE_DIR": str(elsewhere)}
    command = [sys.executable, "-m", "mblint", "check", str(recipe), "--select", "PK001"]
    assert subprocess.run(command, cwd=tmp_path, env=env, capture_output=True).returncode == 1
    assert not (tmp_path / ".mblint_cache").exists()

    stray = elsewhere / "notes.txt"  # not something mblint writes: the folder is left alone
    stray.write_text("mine")
    refused = subprocess.run([sys.executable, "-m", "mblint", "clean"], cwd=tmp_path, env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "not removed" in refused.stderr and stray.exists()
    stray.unlink()
    cleaned = subprocess.run([sys.executable, "-m", "mblint", "clean"], cwd=tmp_path, env=env,
                             capture_output=True, text=True)
    assert (cleaned.returncode, cleaned.stdout) == (0, f"Removed {elsewhere}\n")
    assert not elsewhere.exists()


def test_a_shared_finding_names_the_same_recipe_whatever_part_of_the_cache_is_warm(tmp_path):
    """Two recipe files reach one helper line: the finding there keeps one recipe and names
    both. With only the second file's entry cached, the report is the one without the cache."""
    make_project(tmp_path, mbs=2)
    package = tmp_path / "proj"
    (package / "recipe.py").unlink()
    for name in ("first", "second"):
        (package / f"{name}.py").write_text(RECIPE.replace("tiny_sft_config", f"{name}_sft_config"))

    def shared_finding(use_cache: bool = True):
        [finding] = run(tmp_path, package, use_cache).findings
        return finding.location.path, finding.recipe, finding.recipes, finding.related

    run(tmp_path, package)
    first_entries = [entry for entry in result_entries(tmp_path) if "first.py::" in entry.read_text()]
    assert len(first_entries) == 1
    first_entries[0].unlink()
    partly_warm = shared_finding()
    assert partly_warm == shared_finding(use_cache=False)
    assert partly_warm[:3] == ("proj/common.py", "proj/first.py::first_sft_config",
                               ("proj/first.py::first_sft_config", "proj/second.py::second_sft_config"))


def test_an_entry_written_while_its_helper_was_not_linted_is_not_reused_when_it_is(tmp_path):
    """A finding in a file that is not linted moves to the linted file's call (its editable
    place), so a result cached by `check recipe.py` does not hold for `check recipe.py
    common.py`: the second run gives what it gives without the cache."""
    recipe = make_project(tmp_path, mbs=2)
    common = recipe.parent / "common.py"

    def places(paths, use_cache=True):
        engine = Engine(CheckOptions(select=("PK001",), use_cache=use_cache, cache_root=tmp_path))
        engine.display_root = tmp_path
        return sorted((f.location.path, f.location.line) for f in engine.check_paths([str(p) for p in paths]).findings)

    assert [path for path, _ in places([recipe])] == ["proj/recipe.py"]
    both = places([recipe, common])
    assert both == places([recipe, common], use_cache=False)
    assert [path for path, _ in both] == ["proj/common.py"]


def test_runs_that_lint_different_files_take_turns_without_missing(tmp_path):
    """A pre-commit run (one file) and a whole-tree run alternate: each keeps its own result in
    the entry, so neither throws the other's away."""
    recipe = make_project(tmp_path, mbs=2)
    common = recipe.parent / "common.py"

    def hits(paths):
        engine = Engine(CheckOptions(select=("PK001",), use_cache=True, cache_root=tmp_path))
        engine.display_root = tmp_path
        return engine.check_paths([str(p) for p in paths]).cache_hits

    assert hits([recipe]) == 0 and hits([recipe, common]) == 0
    assert hits([recipe]) == 1 and hits([recipe, common]) == 2


def test_a_megatron_bridge_source_appearing_among_the_import_roots_invalidates_the_entry(tmp_path, monkeypatch):
    """The schema a file is linted against comes from the first import root holding
    ``megatron/bridge`` (mblint.schema.source.find_bridge_source): one that appears there later
    is another schema, so the file's entry no longer holds."""
    recipe = make_project(tmp_path, mbs=2)
    _settle(monkeypatch)
    first = run(tmp_path, recipe)
    assert [s["megatron_bridge_version"] for s in first.schemas] == ["0.6.2"]
    bridge = tmp_path / "megatron" / "bridge"
    bridge.mkdir(parents=True)
    (bridge / "__init__.py").write_text("")
    (bridge / "package_info.py").write_text("MAJOR = 0\nMINOR = 3\nPATCH = 1\n")
    again = run(tmp_path, recipe)
    assert again.cache_hits == 0
    assert [s["megatron_bridge_version"] for s in again.schemas] == ["0.3.1"]
    (bridge / "package_info.py").write_text("MAJOR = 0\nMINOR = 5\nPATCH = 1\n")  # its version changes
    assert [s["megatron_bridge_version"] for s in run(tmp_path, recipe).schemas] == ["0.5.1"]
