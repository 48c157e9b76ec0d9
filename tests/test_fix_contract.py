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


def test_pk001s_fix_leaves_no_new_finding(tmp_path: Path) -> None:
    """Issue 33 section 5. PK001's fix sets the micro-batch size to 1 and keeps the global batch
    and the packs (the same packs per step). Megatron-Bridge's own proposal (GBS 64 -> 32, pack
    2048 -> 4096) would leave packs twice dataset.seq_length wide, a PK006 finding, so that fix
    was always dropped; this one is applied and leaves nothing."""
    from integration_support import recipe

    original = recipe(2).replace("global_batch_size=8", "global_batch_size=64")
    (tmp_path / "r.py").write_text(original)
    result = run(["check", "--no-cache", "--fix", "--unsafe-fixes", "--show-fixes", "r.py"], tmp_path)
    assert (tmp_path / "r.py").read_text() == original.replace("micro_batch_size=2", "micro_batch_size=1")
    assert "Fixed 1 finding with 1 edit in 1 file." in result.stderr
    assert "fix dropped" not in result.stderr and "PK006" not in result.stdout + result.stderr


SEQ_RECIPE = """from megatron.bridge.models import GPTModelProvider
from megatron.bridge.recipes.common import _pretrain_common


def my_pretrain_config():
    cfg = _pretrain_common()
    cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, seq_length=4096)
    return cfg
"""


def test_a_fix_that_leaves_a_new_finding_is_dropped_and_named(tmp_path: Path, mb_roots) -> None:
    """Issue 33 section 5. TS001 sets dataset.seq_length 4096 -> 2048 where the model's is 4096:
    the fix trades one problem for another (SQ001, an error the recipe did not have), so it is
    dropped, said so with the finding it would leave, and nothing is written."""
    from fix_rules import RULES
    from mblint.engine import CheckOptions, Engine
    from mblint.fix import run_fixes
    from mblint.plugins import LoadedPlugins

    (tmp_path / "r.py").write_text(SEQ_RECIPE)
    rules = [RULES["TS001"](), RULES["SQ001"]()]

    def make():
        engine = Engine(CheckOptions(version="0.6", search_paths=(mb_roots["0.6"],)), LoadedPlugins(rules=rules))
        engine.display_root = tmp_path
        return engine

    fixes = run_fixes(make, [str(tmp_path / "r.py")], unsafe=True)
    assert not fixes.changed and not fixes.applied
    reasons = [record.reason for record in fixes.dropped]
    assert reasons and all(reason.startswith("it leaves a new finding: SQ001 [error]") for reason in reasons), reasons


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
    """Issue 22, item 20. TS010 (Megatron-Bridge's proposal: MBS 1, GBS // MBS) with the
    override file (MBS 4) sets MBS 1 in the file and GBS 64 / 4 = 16 on the recipe's line; the
    recipe alone (MBS 2) would then halve the already-fixed GBS 16 to 8 on the same line: that
    second fix would undo the first, so it is not made and said so."""
    from fix_rules import RULES
    from mblint.engine import CheckOptions, Engine
    from mblint.fix import run_fixes
    from mblint.plugins import LoadedPlugins

    (tmp_path / ".git").mkdir()
    (tmp_path / "r.py").write_text(PACKED)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  micro_batch_size: 4\n")
    rules = [RULES["TS010"]()]

    def make():
        engine = Engine(CheckOptions(version="0.6", search_paths=(mb_roots["0.6"],)), LoadedPlugins(rules=rules))
        engine.display_root = tmp_path
        return engine

    fixes = run_fixes(make, [str(tmp_path / "r.py"), str(tmp_path / "o.yaml")], unsafe=True)
    fixes.write()
    recipe = (tmp_path / "r.py").read_text()
    assert "cfg.train.global_batch_size = 16" in recipe and "cfg.train.micro_batch_size = 2" in recipe
    assert (tmp_path / "o.yaml").read_text().endswith("micro_batch_size: 1\n")
    undone = [record for record in fixes.unfixable if "would undo the TS010 fix" in record.reason]
    assert undone and {record.path for record in undone} == {"r.py"}


def test_pk001_fixes_a_recipe_and_its_override_file_each_in_place(tmp_path: Path, mb_roots) -> None:
    """PK001's fix touches only the micro-batch size, where each configuration set it: the
    override file's 4 and the recipe's 2 both become 1, the global batch and the pack stay."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "r.py").write_text(PACKED)
    (tmp_path / "o.yaml").write_text("# mblint: recipe=r.py::my_sft_config\ntrain:\n  micro_batch_size: 4\n")
    result = run(["check", "--no-cache", "--select", "PK001", "--fix", "--unsafe-fixes", "--search-path",
                  str(mb_roots["0.6"]), "r.py", "o.yaml"], tmp_path)
    assert (tmp_path / "r.py").read_text() == PACKED.replace("micro_batch_size = 2", "micro_batch_size = 1")
    assert (tmp_path / "o.yaml").read_text().endswith("micro_batch_size: 1\n")
    assert result.exit_code == 0, result.stdout + result.stderr


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
