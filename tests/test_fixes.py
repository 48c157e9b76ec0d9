"""Autofixes: golden before/after fixtures, idempotence, the fixed finding is gone, files
without fixes stay byte-identical, writes are atomic and careful."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from fix_rules import RULES, make_rule
from mblint.cache import CACHE_DIR_NAME
from mblint.engine import CheckOptions, Engine
from mblint.fix import run_fixes
from mblint.fix.files import ChangedOnDisk, read_state, write_atomic
from mblint.fix.python_writer import PyEdit, PyEditError, PythonFile
from mblint.fix.yaml_writer import YamlEdit, YamlEditError, apply_yaml_edits
from mblint.plugins import LoadedPlugins

FIXTURES = Path(__file__).parent.parent / "fixtures" / "fixes"
CASES = sorted(p.name for p in FIXTURES.iterdir() if (p / "case.json").is_file())
REGENERATE = os.environ.get("MBLINT_REGEN_FIXES") == "1"


def engine_factory(rules, root: Path, search_paths, version=None):
    def make():
        options = CheckOptions(version=version, search_paths=tuple(search_paths))
        engine = Engine(options, LoadedPlugins(rules=list(rules)))
        engine.display_root = root
        return engine

    return make


def run_case(name: str, workdir: Path, mb_roots: dict):
    case = json.loads((FIXTURES / name / "case.json").read_text())
    shutil.copytree(FIXTURES / name / "before", workdir)
    rules = [RULES[r]() for r in case["rules"]]
    version = case.get("version", "0.6")
    make = engine_factory(rules, workdir, [mb_roots[version]], version)
    paths = [str(workdir / p) for p in case["paths"]]
    run = run_fixes(make, paths, unsafe=case.get("unsafe", False))
    written, errors = run.write()
    assert not errors
    return case, make, paths, run


def lint(make, paths):
    return make().check_paths(paths)


@pytest.mark.parametrize("name", CASES)
def test_golden(name, tmp_path, mb_roots):
    work = tmp_path / "work"
    case, make, paths, run = run_case(name, work, mb_roots)
    before = FIXTURES / name / "before"
    after = FIXTURES / name / "after"
    if REGENERATE:
        shutil.rmtree(after, ignore_errors=True)
        for path in sorted(work.rglob("*")):
            relative = path.relative_to(work)
            if path.is_file() and path.read_bytes() != (before / relative).read_bytes():
                (after / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, after / relative)
    for path in sorted(work.rglob("*")):
        if not path.is_file() or CACHE_DIR_NAME in path.relative_to(work).parts:
            continue  # the cache a run may write (a derived schema) is not the fix's output
        relative = path.relative_to(work)
        expected = after / relative if (after / relative).exists() else before / relative
        assert path.read_bytes() == expected.read_bytes(), f"{name}: {relative} differs from the golden file"
    assert not run.dropped, [str(d) for d in run.dropped]
    # A fixed file has no finding of the fixed rule (unless the case expects nothing to change).
    report = lint(make, paths)
    if after.exists():
        assert not [f for f in report.findings if f.rule_id in case["rules"]], \
            [f.message for f in report.findings]
    # Fixing twice changes nothing the second time.
    again = run_fixes(make, paths, unsafe=case.get("unsafe", False))
    assert not again.changed and not again.applied


def test_every_fix_kind_has_a_golden_case():
    kinds = set(CASES)
    for needed in ("py_constant", "py_kwarg", "py_dict", "py_crlf", "py_return_helper", "py_shared_helper",
                   "py_rename", "py_remove", "yaml_pk001", "yaml_crlf", "yaml_rename", "yaml_remove"):
        assert needed in kinds
    for name in CASES:
        if name != "py_pk001_safe_only":
            assert (FIXTURES / name / "after").is_dir(), f"{name} has no after/ folder"


def test_crlf_is_kept(tmp_path, mb_roots):
    _, _, _, _ = run_case("py_crlf", tmp_path / "w", mb_roots)
    data = (tmp_path / "w" / "recipe.py").read_bytes()
    assert data.count(b"\r\n") == data.count(b"\n")


# ----- fixes that must be refused ---------------------------------------------------------------


def test_fix_that_leaves_finding_is_dropped(tmp_path, mb06):
    """A rule whose fix does not cure it: the edit is dropped and reported, nothing written."""
    rule = make_rule("TS090", "train.global_batch_size", ..., 64)
    (tmp_path / "recipe.py").write_text(
        "from megatron.bridge.recipes.common import _pretrain_common\n\n\n"
        "def c_config():\n    cfg = _pretrain_common()\n    cfg.train.global_batch_size = 128\n    return cfg\n")
    make = engine_factory([rule], tmp_path, [mb06])
    run = run_fixes(make, [str(tmp_path / "recipe.py")], unsafe=True)  # it replaces the written 128
    assert not run.changed and not run.applied
    assert run.dropped and "still reported" in run.dropped[0].reason


def test_command_line_override_is_not_fixed(tmp_path, mb06):
    rule = RULES["TS008"]()
    source = ("from megatron.bridge.recipes.common import _pretrain_common\n\n\n"
              "def c_config():\n    cfg = _pretrain_common()\n    return cfg\n")
    (tmp_path / "recipe.py").write_text(source)

    def make():
        engine = Engine(CheckOptions(search_paths=(mb06,), dotlist=("train.global_batch_size=128",)),
                        LoadedPlugins(rules=[rule]))
        engine.display_root = tmp_path
        return engine

    run = run_fixes(make, [str(tmp_path / "recipe.py")], unsafe=True)  # it replaces the --set 128
    assert not run.changed
    assert run.unfixable and "command line" in run.unfixable[0].reason


def test_value_below_none_parent_is_not_added(tmp_path, mb06):
    rule = make_rule("TS091", "train.global_batch_size", ..., 64,
                     extra=(("dataset.offline_packing_specs.pad_seq_to_mult", 8),))
    (tmp_path / "recipe.py").write_text(
        "from megatron.bridge.recipes.common import _pretrain_common\n\n\n"
        "def c_config():\n    cfg = _pretrain_common()\n    return cfg\n")
    run = run_fixes(engine_factory([rule], tmp_path, [mb06]), [str(tmp_path / "recipe.py")])
    assert not run.changed
    assert run.unfixable


# ----- writers ------------------------------------------------------------------------------


def test_python_writer_replaces_only_the_value():
    text = "def f():\n    cfg = g()\n    cfg.a.b = (  # keep\n        3\n    )  # tail\n    return cfg\n"
    new = PythonFile(text).apply([PyEdit("set", "a.b", 5, line=3, column=5)])
    assert new == "def f():\n    cfg = g()\n    cfg.a.b = (  # keep\n        5\n    )  # tail\n    return cfg\n"


def test_python_writer_refuses_chained_assignment():
    from mblint.fix.python_writer import PyEditError

    with pytest.raises(PyEditError):
        PythonFile("def f():\n    cfg.a.b = cfg.a.c = 1\n").apply([PyEdit("set", "a.b", 2, line=2, column=5)])


def test_python_writer_tuple_assignment():
    text = "def f():\n    cfg.a.b, cfg.a.c = 1, 2\n"
    assert PythonFile(text).apply([PyEdit("set", "a.c", 9, line=2, column=5)]) == "def f():\n    cfg.a.b, cfg.a.c = 1, 9\n"


def test_python_writer_removes_last_kwarg_cleanly():
    text = "def f():\n    x = C(a=1, b=2)\n"
    assert PythonFile(text).apply([PyEdit("remove", "n.b", line=2, column=16)]) == "def f():\n    x = C(a=1)\n"


TRICKY_LAYOUTS = [
    "# header comment\n\n\nimport os\n\n\n# about f\n@decorator\ndef f():\n    cfg.a.b = 1  # x\n    return cfg\n",
    "x = 1; y = C(a=2,\n    b={'k': 3})\n\n\ndef g():\n\tcfg.a.b = [1,\n\t    2]\n\treturn cfg\n# footer\n",
    "def h():\r\n    cfg.a.b = 1\r\n    return cfg",  # CRLF, no newline at the end
    "\"\"\"Doc.\n\nMore.\"\"\"\nclass K:\n    z: int = 3\n\n\nasync def k():\n    if a:\n        cfg.a.b = 2\n",
]


@pytest.mark.parametrize("text", TRICKY_LAYOUTS + ["fixtures"])
def test_python_file_positions_per_statement_match_the_whole_module(text):
    """Positions worked out one top-level statement at a time equal libcst's for the whole
    module, for every node of every statement (header and footer comments belong to none)."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    texts = [text] if text != "fixtures" else [
        p.read_text(encoding="utf-8") for p in sorted((Path(__file__).parents[1] / "fixtures").rglob("*.py"))]
    checked = 0
    for source in texts:
        try:
            file = PythonFile(source)
        except PyEditError:  # the fixtures hold files that do not parse, on purpose
            continue
        for number in range(len(file.module.body)):
            file._index(number)
        whole = MetadataWrapper(file.module, unsafe_skip_copy=True).resolve(PositionProvider)
        for statement in file.module.body:
            for node in _nodes_below(statement, cst):
                where = whole[node]
                assert file._ranges[node] == (where.start.line, where.start.column, where.end.line, where.end.column)
                checked += 1
    assert checked > (20 if text != "fixtures" else 10_000)


def _nodes_below(root, cst) -> list:
    found = []

    class Collect(cst.CSTVisitor):
        def on_visit(self, node) -> bool:
            found.append(node)
            return True

    root.visit(Collect())
    return found


def test_python_file_locates_and_edits_in_a_later_statement():
    text = "# c\nimport x\n\n\ndef a():\n    cfg.a.b = 1\n    return cfg\n\n\ndef b():\n    cfg.a.b = 1\n    return cfg\n"
    new = PythonFile(text).apply([PyEdit("set", "a.b", 5, line=11, column=5)])
    assert new == "# c\nimport x\n\n\ndef a():\n    cfg.a.b = 1\n    return cfg\n\n\ndef b():\n    cfg.a.b = 5\n    return cfg\n"
    with pytest.raises(PyEditError):  # line 6 holds a.b in a(), not at column 9
        PythonFile(text).target_at(6, 9, "a.b")


CHECKED_TEXT = ("import x\n\n\ndef f():\n    cfg.a.b = 1\n    cfg.a.c = C(k=1, j=2)\n    return cfg\n\n\n"
                "def g():\n    cfg.a.d = 3\n")


@pytest.mark.parametrize("edit", [
    PyEdit("set", "a.b", 7, line=5, column=5),
    PyEdit("rename", "a.b", new_field="a.e", line=5, column=5),
    PyEdit("rename", "a.c.k", new_field="z.k2", line=6, column=17),  # a keyword keeps its parent
    PyEdit("remove", "a.c.j", line=6, column=22),
    PyEdit("remove", "a.d", line=11, column=5),  # would leave g() empty
    PyEdit("set", "a.b", 7, line=5, column=9),  # no assignment starts there
])
def test_python_file_check_refuses_what_apply_refuses(edit):
    """``check`` (planning, each edited statement parsed alone) agrees with ``apply``."""
    def outcome(method):
        try:
            method([edit])
            return None
        except PyEditError as error:
            return str(error)

    file = PythonFile(CHECKED_TEXT)
    assert outcome(file.check) == outcome(file.apply)


def test_a_fix_run_parses_each_text_once(tmp_path, mb06, monkeypatch):
    """The planner and the writer share one parse of each file's text."""
    import mblint.fix.python_writer as writer

    parsed = []
    real_init = writer.PythonFile.__init__
    monkeypatch.setattr(writer.PythonFile, "__init__", lambda self, text: parsed.append(text) or real_init(self, text))
    rule = make_rule("TS091", "train.global_batch_size", 128, 64)
    (tmp_path / "recipe.py").write_text(
        "from megatron.bridge.recipes.common import _pretrain_common\n\n\n"
        "def c_config():\n    cfg = _pretrain_common()\n    cfg.train.global_batch_size = 128\n    return cfg\n")
    run = run_fixes(engine_factory([rule], tmp_path, [mb06]), [str(tmp_path / "recipe.py")], unsafe=True)
    assert run.applied and not run.dropped
    assert len(parsed) == len(set(parsed))


def test_yaml_writer_keeps_everything_else():
    text = "a:\n  b: 1   # note\n  c: [1, 2]  # list\n  d: 'x'\n"
    new = apply_yaml_edits(text, [YamlEdit("set", 2, 3, "b", 16), YamlEdit("set", 3, 3, "c", [3]),
                                  YamlEdit("set", 4, 3, "d", "y z")])
    assert new == "a:\n  b: 16   # note\n  c: [3]  # list\n  d: 'y z'\n"


def test_yaml_writer_empty_value_and_refusals():
    assert apply_yaml_edits("a:\n  b:\n  c: 1\n", [YamlEdit("set", 2, 3, "b", 4)]) == "a:\n  b: 4\n  c: 1\n"
    with pytest.raises(YamlEditError):
        apply_yaml_edits("a:\n  b: |\n    x\n", [YamlEdit("set", 2, 3, "b", "y")])
    with pytest.raises(YamlEditError):
        apply_yaml_edits("a:\n  b: 1\n", [YamlEdit("remove", 2, 3, "b")])  # would leave a: null


def test_yaml_move_to_another_section():
    """A rename across parents (train.eval_iters -> validation.eval_iters) moves the line, with
    its comment and line ending, to the end of the target section or to a new section."""
    text = "train:\r\n  eval_iters: 5  # old\r\n  train_iters: 10\r\nvalidation:\r\n  eval_interval: 3\r\n"
    move = YamlEdit("move", 2, 3, "train.eval_iters", None, "validation.eval_iters")
    assert apply_yaml_edits(text, [move]) == \
        "train:\r\n  train_iters: 10\r\nvalidation:\r\n  eval_interval: 3\r\n  eval_iters: 5  # old\r\n"
    without = "train:\n  eval_iters: 5\n  train_iters: 10\n"
    assert apply_yaml_edits(without, [move]) == "train:\n  train_iters: 10\nvalidation:\n  eval_iters: 5\n"
    with pytest.raises(YamlEditError):  # the target is already set in the file
        apply_yaml_edits("train:\n  eval_iters: 5\n  x: 1\nvalidation:\n  eval_iters: 3\n", [move])
    with pytest.raises(YamlEditError):  # the old section would be left null
        apply_yaml_edits("train:\n  eval_iters: 5\n", [move])


def test_yaml_string_that_looks_like_a_number_is_quoted():
    assert apply_yaml_edits("a: x\n", [YamlEdit("set", 1, 1, "a", "1.5")]) == 'a: "1.5"\n'


# ----- writes -------------------------------------------------------------------------------


def test_write_is_atomic_keeps_mode_and_refuses_changed_file(tmp_path):
    path = tmp_path / "r.py"
    path.write_text("x = 1\n")
    path.chmod(0o640)
    state = read_state(path)
    assert write_atomic(state, "x = 2\n")
    assert path.read_text() == "x = 2\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["r.py"]
    # The file changed since it was read: not overwritten.
    with pytest.raises(ChangedOnDisk):
        write_atomic(state, "x = 3\n")
    assert path.read_text() == "x = 2\n"
    # Nothing to change: not written.
    assert not write_atomic(read_state(path), "x = 2\n")


def test_bom_is_kept(tmp_path):
    path = tmp_path / "r.py"
    path.write_bytes(b"\xef\xbb\xbfx = 1\n")
    state = read_state(path)
    write_atomic(state, state.text.replace("1", "2"))
    assert path.read_bytes() == b"\xef\xbb\xbfx = 2\n"


# ----- the CLI ------------------------------------------------------------------------------


def test_cli_diff_writes_nothing_and_fix_writes(tmp_path, mb06, monkeypatch):
    from click.testing import CliRunner

    from mblint import cli

    shutil.copytree(FIXTURES / "py_pk001_unsafe" / "before", tmp_path / "w")
    recipe = tmp_path / "w" / "recipe.py"
    original = recipe.read_bytes()
    monkeypatch.chdir(tmp_path / "w")
    runner = CliRunner()
    args = ["check", "recipe.py", "--search-path", str(mb06), "--select", "PK001"]
    result = runner.invoke(cli.main, args + ["--diff", "--unsafe-fixes"])
    assert result.exit_code == 1, result.output
    assert "+    cfg.train.micro_batch_size = 1" in result.output
    assert recipe.read_bytes() == original
    result = runner.invoke(cli.main, args + ["--fix"])  # the fix is unsafe: nothing happens
    assert recipe.read_bytes() == original
    result = runner.invoke(cli.main, args + ["--fix", "--unsafe-fixes", "--show-fixes"])
    assert result.exit_code == 0, result.output
    assert recipe.read_bytes() == (FIXTURES / "py_pk001_unsafe" / "after" / "recipe.py").read_bytes()
    result = runner.invoke(cli.main, args + ["--diff", "--unsafe-fixes"])
    assert result.exit_code == 0 and "+++" not in result.output


# ----- the wheels ---------------------------------------------------------------------------


@pytest.mark.parametrize("line", ["0.3", "0.6"])
def test_wheel_recipes_pass_through_fix(line, tmp_path, mb_roots):
    """--fix --unsafe-fixes over a copy of the wheel's recipes, with a test rule that fires on
    many recipes (manual_gc_interval = 100 -> 50) besides PK001: every file without an applied
    fix is byte-identical, every changed file parses and differs only by the applied fixes."""
    import ast
    import difflib

    copy = tmp_path / "mb"
    shutil.copytree(mb_roots[line] / "megatron", copy / "megatron")
    rules = [RULES["PK001"](), make_rule("TS050", "train.manual_gc_interval", 100, 50)]
    make = engine_factory(rules, copy, [copy], line)
    recipes = copy / "megatron" / "bridge" / "recipes"
    before = {p: p.read_bytes() for p in copy.rglob("*.py")}
    run = run_fixes(make, [str(recipes)], unsafe=True)
    written, errors = run.write()
    assert not errors and not run.dropped, [str(d) for d in run.dropped]
    fixed_files = {copy / r.path for r in run.applied}
    assert run.applied and written
    for path, data in before.items():
        now = path.read_bytes()
        if path not in fixed_files:
            assert now == data, f"{path} changed without a fix"
            continue
        ast.parse(now.decode("utf-8"))
        changed = [line for line in difflib.ndiff(data.decode().splitlines(), now.decode().splitlines())
                   if line.startswith(("+ ", "- "))]
        assert all("manual_gc_interval" in c or "return" in c or "cfg = " in c or "micro_batch" in c
                   or "global_batch" in c or "packed_sequence_size" in c for c in changed), changed
    report = make().check_paths([str(recipes)])
    assert not [f for f in report.findings if f.rule_id == "TS050"]


# ----- alternatives -------------------------------------------------------------------------


def test_alternative_intents_are_shown_not_applied(tmp_path, mb06):
    """OT002 offers 'set the other to False too' (the fix, keeping the False the author wrote) or
    'set the False one to True' (an alternative): applying both would swap the two values and
    keep them disagreeing."""
    (tmp_path / "recipe.py").write_text(
        "from megatron.bridge.recipes.common import _pretrain_common\n\n\n"
        "def c_config():\n    cfg = _pretrain_common()\n    cfg.ddp.use_distributed_optimizer = False\n"
        "    return cfg\n")
    make = engine_factory([RULES["OT002"]()], tmp_path, [mb06])
    report = lint(make, [str(tmp_path / "recipe.py")])
    [finding] = report.findings
    assert [i.alternative for i in finding.fixes] == [False, True]
    run = run_fixes(make, [str(tmp_path / "recipe.py")], unsafe=True)
    run.write()
    text = (tmp_path / "recipe.py").read_text()
    assert "cfg.ddp.use_distributed_optimizer = False" in text, text
    assert "cfg.optimizer.use_distributed_optimizer = False" in text, text
    assert not lint(make, [str(tmp_path / "recipe.py")]).findings


@pytest.mark.parametrize("last, kept", [("enable_in_batch_packing", "enable_in_batch_packing"),
                                        ("enable_offline_packing", "enable_offline_packing")])
def test_pk003_keeps_the_packing_mode_set_last(last, kept, tmp_path, mb06):
    first = "enable_offline_packing" if last == "enable_in_batch_packing" else "enable_in_batch_packing"
    (tmp_path / "recipe.py").write_text(
        "from megatron.bridge.recipes.common import _sft_common\n\n\n"
        f"def c_config():\n    cfg = _sft_common()\n    cfg.dataset.{first} = True\n"
        f"    cfg.dataset.{last} = True\n    return cfg\n")
    make = engine_factory([RULES["PK003"]()], tmp_path, [mb06])
    [finding] = lint(make, [str(tmp_path / "recipe.py")]).findings
    applied = [(i.field, i.value) for i in finding.fixes if not i.alternative]
    # offline packing goes with its specs (validate() rejects specs without the flag)
    turned_off = [(f"dataset.{first}", False)] + ([("dataset.offline_packing_specs", None)]
                                                  if first == "enable_offline_packing" else [])
    assert applied == turned_off


def test_deprecated_graph_switch_becomes_an_implementation(tmp_path, mb06):
    """OT008: `external_cuda_graph = True` is not renamed to `cuda_graph_impl = True` (a type
    error in Megatron-Core) but replaced by the implementation it stands for."""
    (tmp_path / "recipe.py").write_text(
        "from megatron.bridge.models import GPTModelProvider\n"
        "from megatron.bridge.recipes.common import _pretrain_common\n\n\n"
        "def c_config():\n    cfg = _pretrain_common()\n    cfg.model = GPTModelProvider()\n"
        "    cfg.model.external_cuda_graph = True  # graphs\n"
        "    return cfg\n")
    make = engine_factory([RULES["OT008"]()], tmp_path, [mb06])
    run = run_fixes(make, [str(tmp_path / "recipe.py")], unsafe=True)
    run.write()
    assert (tmp_path / "recipe.py").read_text() == (
        "from megatron.bridge.models import GPTModelProvider\n"
        "from megatron.bridge.recipes.common import _pretrain_common\n\n\n"
        "def c_config():\n    cfg = _pretrain_common()\n    cfg.model = GPTModelProvider()\n"
        "    cfg.model.cuda_graph_impl = \"transformer_engine\"  # graphs\n"
        "    return cfg\n")


def test_yaml_rename_with_a_new_value_keeps_the_rest():
    text = "model:\r\n  external_cuda_graph: true   # graphs\r\n  num_layers: 2\r\n"
    edit = YamlEdit("rename", 2, 3, "external_cuda_graph", "transformer_engine", "cuda_graph_impl")
    assert apply_yaml_edits(text, [edit]) == \
        "model:\r\n  cuda_graph_impl: transformer_engine   # graphs\r\n  num_layers: 2\r\n"


def test_diff_matches_difflib_and_stays_minimal_on_long_files():
    import difflib

    from mblint.fix import unified_diff

    before = [f"line {i}\n" for i in range(10)]
    after = before[:3] + ["new\n"] + before[4:] + ["tail\n"]
    assert list(unified_diff(before, after, "a/x", "b/x")) == list(difflib.unified_diff(before, after, "a/x", "b/x"))
    assert list(unified_diff(before, before, "a/x", "b/x")) == []
    # 320 lines where a few lines repeat in every recipe (difflib's autojunk treats them as junk
    # and shows them removed and added again): only the two edited lines per recipe change.
    def recipe(i, flag, extra):
        return [f"def r{i}():\n", f"    cfg.c = Config(overlap={flag})\n", "\n", "    _common(cfg)\n",
                "    _finalize(cfg)\n", *extra, "    return cfg\n", "\n", "\n"]

    long_before = [line for i in range(40) for line in recipe(i, True, [])]
    long_after = [line for i in range(40) for line in recipe(i, False, ["    cfg.z = 1\n"])]
    changed = [line for line in unified_diff(long_before, long_after, "a/x", "b/x")
               if line[0] in "+-" and not line.startswith(("+++", "---"))]
    assert changed == ["-    cfg.c = Config(overlap=True)\n", "+    cfg.c = Config(overlap=False)\n",
                       "+    cfg.z = 1\n"] * 40
