"""One problem, one finding, decided in one place (issue 31, item 5): when two selected rules
report the same problem on a job the more specific one's finding stays; when it is not
selected, the other rule reports. Each pair below was a ``return`` in the less specific rule's
``check`` before, so ignoring the specific rule lost the error (``--ignore PB011`` on an
``_8gpu_`` recipe with TP 16 printed "All checks passed")."""

from __future__ import annotations

import ast
import inspect
import json
import re

import pytest
from click.testing import CliRunner

from mblint.arbitration import most_specific, superseded_by
from mblint.cli import main
from mblint.findings import Finding, Severity
from mblint.model import Origin
from mblint.plugins import load_plugins

HEADER = """from megatron.bridge import AutoBridge
from megatron.bridge.recipes.common import _pretrain_common, _sft_common


"""
PRETRAIN = "    cfg = _pretrain_common()\n"
LLAMA = ('    cfg.model = AutoBridge.from_hf_pretrained("meta-llama/Llama-3.1-8B")'
         '.to_megatron_provider(load_weights=False)\n')
HYBRIDEP_PACKED = ('    cfg = _sft_common()\n'
                   '    cfg.model = AutoBridge.from_hf_pretrained("x").to_megatron_provider(load_weights=False)\n'
                   '    cfg.model.moe_token_dispatcher_type = "flex"\n'
                   '    cfg.model.moe_flex_dispatcher_backend = "hybridep"\n'
                   '    cfg.dataset.dataset_kwargs = {}\n'
                   '    cfg.model.cuda_graph_impl = "transformer_engine"\n')

# (specific rule, other rule, recipe function name, body, world size or None)
PAIRS = [
    ("PB011", "PB001", "llama3_8b_pretrain_8gpu_h100_bf16_config",
     PRETRAIN + LLAMA + "    cfg.model.tensor_model_parallel_size = 16\n", None),
    ("PB011", "PB002", "deepseek_v3_pretrain_64gpu_h100_bf16_config",
     PRETRAIN + LLAMA + "    cfg.model.pipeline_model_parallel_size = 8\n"
                        "    cfg.model.expert_model_parallel_size = 64\n", None),
    # the expert grid (16) divides the dense grid (16), which does not divide 8 GPUs
    ("PB001", "PB002", "example_config",
     PRETRAIN + LLAMA + "    cfg.model.tensor_model_parallel_size = 4\n    cfg.model.context_parallel_size = 4\n"
                        "    cfg.model.expert_model_parallel_size = 16\n", 8),
    ("PB011", "LC003", "qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config",
     PRETRAIN + LLAMA + "    cfg.model.expert_model_parallel_size = 16\n", None),
    ("CG012", "MO003", "example_config", HYBRIDEP_PACKED, None),
    ("SQ001", "LC001", "example_config",
     PRETRAIN + LLAMA + "    cfg.model.seq_length = 131072\n    cfg.dataset.seq_length = 8192\n"
                        "    cfg.model.recompute_granularity = 'full'\n", None),
    ("SQ001", "LC002", "example_config",
     PRETRAIN + LLAMA + "    cfg.model.seq_length = 131072\n    cfg.dataset.seq_length = 8192\n"
                        "    cfg.model.context_parallel_size = 2\n", 64),
    # SchedulerConfig.finalize() raises on max_steps 0 before validate() compares it with train_iters
    # (OT005) or computes the decay length from it (SC001)
    ("SC002", "OT005", "example_config", PRETRAIN + "    cfg.scheduler.max_steps = 0\n", None),
    ("SC002", "SC001", "example_config", PRETRAIN + "    cfg.scheduler.max_steps = 0\n", None),
]


def _rules_reported(tmp_path, monkeypatch, mb_roots, function, body, world, select, ignore=()):
    (tmp_path / ".git").mkdir(exist_ok=True)
    (tmp_path / "recipe.py").write_text(f"{HEADER}def {function}():\n{body}    return cfg\n")
    monkeypatch.chdir(tmp_path)
    args = ["check", "recipe.py", "--no-cache", "--format", "json", "--search-path", str(mb_roots["0.6"]),
            "--select", ",".join(select)]
    if ignore:
        args += ["--ignore", ",".join(ignore)]
    if world:
        args += ["--world-size", str(world)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1), result.output
    return sorted(f["rule"] for f in json.loads(result.stdout)["findings"])


@pytest.mark.parametrize("specific,other,function,body,world", PAIRS, ids=[f"{s}-{o}" for s, o, *_ in PAIRS])
def test_both_selected_the_specific_rule_reports_alone(tmp_path, monkeypatch, mb_roots, specific, other, function,
                                                       body, world):
    assert _rules_reported(tmp_path, monkeypatch, mb_roots, function, body, world, [specific, other]) == [specific]


@pytest.mark.parametrize("specific,other,function,body,world", PAIRS, ids=[f"{s}-{o}" for s, o, *_ in PAIRS])
def test_the_specific_rule_ignored_the_other_reports(tmp_path, monkeypatch, mb_roots, specific, other, function,
                                                     body, world):
    assert _rules_reported(tmp_path, monkeypatch, mb_roots, function, body, world, [specific, other],
                           ignore=[specific]) == [other]


def test_the_issue_case_all_rules_selected_and_pb011_ignored(tmp_path, monkeypatch, mb_roots):
    """The whole pack, ``--ignore PB011``: PB001's error on an 8-GPU recipe with TP 16."""
    function, body = PAIRS[0][2], PAIRS[0][3]
    assert "PB001" in _rules_reported(tmp_path, monkeypatch, mb_roots, function, body, None, ["ALL"], ["PB011"])


def _finding(rule_id: str, problem: str) -> Finding:
    return Finding(rule_id, "probe", Severity.ERROR, "m", Origin("r.py", 1, 1, 1, 2), problem=problem)


class _Rule:
    def __init__(self, rule_id: str, supersedes: tuple[str, ...] = ()) -> None:
        self.id, self.supersedes = rule_id, supersedes


def test_only_a_finding_of_the_same_problem_is_replaced():
    superseded = superseded_by([_Rule("AA001", ("BB001",)), _Rule("BB001")])
    kept = most_specific([_finding("AA001", "p"), _finding("BB001", "q"), _finding("BB001", "p"),
                          _finding("BB001", "")], superseded)
    assert [(f.rule_id, f.problem) for f in kept] == [("AA001", "p"), ("BB001", "q"), ("BB001", "")]


def test_supersedes_names_rules_of_the_pack():
    rules = {rule.id: rule for rule in load_plugins().rules}
    for rule in rules.values():
        assert set(rule.supersedes) <= set(rules), f"{rule.id} supersedes an unknown rule"


def test_no_rule_names_another_rule_in_its_code():
    """A rule knows no other rule: another rule's id appears only in its documentation,
    examples and ``supersedes`` (data), never in the functions that check."""
    ids = {rule.id for rule in load_plugins().rules}
    for rule in load_plugins().rules:
        source = inspect.getsource(inspect.getmodule(rule))
        lines = source.splitlines()
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                code = "\n".join(lines[node.lineno - 1:node.end_lineno])
                named = set(re.findall(r"\b[A-Z]{2,4}\d{3}\b", code)) & ids - {rule.id}
                assert not named, f"{rule.id}'s {node.name} names {sorted(named)}"
