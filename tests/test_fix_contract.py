"""Fixes keep ruff's contract (issue 21, section 3): ``--unsafe-fixes`` only widens what
``--fix``/``--diff`` apply, a safe fix never contradicts an explicit literal, and fixes of
different findings touching the same fields are planned together."""

from __future__ import annotations

from pathlib import Path

from integration_support import BAD_RECIPE, run


def test_unsafe_fixes_alone_writes_nothing(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)  # PK001, whose fix is unsafe
    result = run(["check", "--no-cache", "--unsafe-fixes", "r.py"], tmp_path)
    assert result.exit_code == 1
    assert "PK001" in result.stdout and "Fixed" not in result.stdout + result.stderr
    assert (tmp_path / "r.py").read_text() == BAD_RECIPE


DIST_OPT = """from megatron.bridge.training.config import (ConfigContainer, DistributedDataParallelConfig, OptimizerConfig,
                                             TrainingConfig)


def dist_config() -> ConfigContainer:
    cfg = ConfigContainer(
        train=TrainingConfig(micro_batch_size=1, global_batch_size=8),
        optimizer=OptimizerConfig(optimizer="adam", lr=1e-4, use_distributed_optimizer=True),
        ddp=DistributedDataParallelConfig(),
    )
    cfg.ddp.use_distributed_optimizer = False
    return cfg
"""


def test_a_safe_fix_never_turns_an_explicit_false_into_true(tmp_path: Path) -> None:
    """OT002: the author wrote ddp.use_distributed_optimizer = False; Megatron-Bridge turns it
    on anyway. --fix must not write True over that False (the opposite of what was written)."""
    (tmp_path / "r.py").write_text(DIST_OPT)
    shown = run(["check", "--no-cache", "r.py"], tmp_path)
    assert "r.py:11:5: OT002" in shown.stdout
    assert "  = unsafe fix: set optimizer.use_distributed_optimizer = False too, as ddp.use_distributed_optimizer says" \
        in shown.stdout
    assert "  = alternative (not applied): or set ddp.use_distributed_optimizer = True" in shown.stdout
    assert "  = fix:" not in shown.stdout
    fixed = run(["check", "--no-cache", "--fix", "r.py"], tmp_path)
    assert (tmp_path / "r.py").read_text() == DIST_OPT, fixed.stderr
    unsafe = run(["check", "--no-cache", "--fix", "--unsafe-fixes", "r.py"], tmp_path)
    assert unsafe.exit_code == 0, unsafe.stdout + unsafe.stderr
    text = (tmp_path / "r.py").read_text()
    assert "use_distributed_optimizer=False)" in text and "cfg.ddp.use_distributed_optimizer = False" in text


def test_any_safe_fix_that_contradicts_a_written_value_becomes_unsafe(tmp_path: Path) -> None:
    """CG003's fix (use_te_rng_tracker = True for CUDA graphs) is safe where the recipe never
    set the tracker, and unsafe where the recipe wrote False."""
    from integration_support import FIXABLE_RECIPE

    (tmp_path / "unset.py").write_text(FIXABLE_RECIPE)
    written = FIXABLE_RECIPE.replace('    return cfg', '    cfg.model.use_te_rng_tracker = False\n    return cfg')
    (tmp_path / "written.py").write_text(written)
    result = run(["check", "--no-cache", "--format", "json", "--select", "CG003", "."], tmp_path)
    import json

    safety = {f["location"]["path"]: [fix["safe"] for fix in f["fixes"]]
              for f in json.loads(result.stdout)["findings"]}
    assert safety == {"unset.py": [True], "written.py": [False]}


def test_a_fix_that_leaves_a_new_finding_is_dropped_and_named(tmp_path: Path) -> None:
    """Issue 33 section 5. PK001's unsafe fix (MBS 1, GBS 64 -> 32, pack 2048 -> 4096: the same
    tokens per step, as Megatron-Bridge's own error proposes) leaves packs twice dataset.seq_length
    wide, a PK006 finding the recipe did not have: the fix trades one problem for another, so it
    is dropped, said so with the finding it would leave, and nothing is written."""
    from integration_support import recipe

    original = recipe(2).replace("global_batch_size=8", "global_batch_size=64")
    (tmp_path / "r.py").write_text(original)
    before = run(["check", "--no-cache", "r.py"], tmp_path)
    assert "PK001" in before.stdout and "PK006" not in before.stdout
    result = run(["check", "--no-cache", "--fix", "--unsafe-fixes", "--show-fixes", "r.py"], tmp_path)
    assert (tmp_path / "r.py").read_text() == original
    assert "fix dropped: r.py:8: PK001 set micro_batch_size to 1 (it leaves a new finding: PK006 [warning] " \
           "dataset.offline_packing_specs.packed_sequence_size is 4096, but dataset.seq_length is 2048" in result.stderr
    assert "Fixed" not in result.stderr
    assert "PK001" in result.stdout and "PK006" not in result.stdout  # the recipe as it was


PACKED = """from megatron.bridge.recipes.common import _sft_common
from megatron.bridge.data.packing import PackedSequenceSpecs


def my_sft_config():
    cfg = _sft_common()
    cfg.dataset.enable_offline_packing = True
    cfg.dataset.offline_packing_specs = PackedSequenceSpecs(packed_sequence_size=2048, pad_seq_to_mult=1)
    cfg.dataset.seq_length = 2048
    cfg.model.seq_length = 2048
    cfg.train.micro_batch_size = 2
    cfg.train.global_batch_size = 64
    return cfg
"""


def test_fixes_of_a_recipe_and_its_override_file_never_compound(tmp_path: Path, mb_roots) -> None:
    """Issue 22, item 20. With the override file (MBS 4) PK001 proposes MBS 1 in the file, GBS
    64 / 4 = 16 and pack 2048 * 4 = 8192 on the recipe's lines; the recipe alone (MBS 2) would
    then halve the already-fixed GBS 16 to 8 and double the pack to 16384 on the same lines:
    that second fix would undo the first, so it is dropped and said so, and PK001 stays."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "r.py").write_text(PACKED)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  micro_batch_size: 4\n")
    result = run(["check", "--no-cache", "--select", "PK001", "--fix", "--unsafe-fixes", "--search-path",
                  str(mb_roots["0.6"]), "r.py", "o.yaml"], tmp_path)
    recipe = (tmp_path / "r.py").read_text()
    assert "cfg.train.global_batch_size = 16" in recipe and "packed_sequence_size=8192" in recipe
    assert "cfg.train.micro_batch_size = 2" in recipe
    assert (tmp_path / "o.yaml").read_text().endswith("micro_batch_size: 1\n")
    assert (result.stdout + result.stderr).count("Not fixed: r.py:11: PK001") == 1  # once, not per configuration
    assert "would undo the PK001 fix" in result.stdout + result.stderr
    assert result.exit_code == 1


def test_a_fix_not_made_is_said_once_for_a_recipe_and_its_override_file(tmp_path: Path, mb_roots) -> None:
    """Issue 33 section 5: the recipe's PK001 is a finding of both configurations (the recipe
    alone and with its override file); its "Not fixed" line was printed once per configuration."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "r.py").write_text(PACKED)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  train_iters: 10\n")
    result = run(["check", "--no-cache", "--select", "PK001", "--fix", "--show-fixes", "--search-path",
                  str(mb_roots["0.6"]), "r.py", "o.yaml"], tmp_path)
    output = result.stdout + result.stderr
    assert output.count("Not fixed: r.py:11: PK001") == 1, output
    assert "unsafe fix: use --unsafe-fixes" in output
