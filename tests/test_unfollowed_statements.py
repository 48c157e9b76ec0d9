"""A statement the interpreter does not follow and that may change the configuration is a gap
(CV005), where it is (issue 31, item 3): each case below printed "All checks passed" on main
a164b78 although the recipe alone has PK001. A statement mblint follows, or one that cannot
reach the configuration, is no gap."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from integration_support import BAD_RECIPE, IMPORTS, run

PASSED = "All checks passed"
UNREAD = "from mycompany.settings import name, extra, code, mode, part, fast\n"
LINE = 16  # of the statement added before `return cfg`


def recipe_with(statement: str, imports: str = UNREAD) -> str:
    return BAD_RECIPE.replace(IMPORTS, IMPORTS + imports).replace("    return cfg\n", statement + "    return cfg\n")


def findings(tmp_path: Path, text: str) -> list[tuple]:
    (tmp_path / "r.py").write_text(text)
    document = json.loads(run(["check", "--no-cache", "--format", "json", "r.py"], tmp_path).stdout)
    return [(f["rule"], f["location"]["line"], f["message"]) for f in document["findings"]]


@pytest.mark.parametrize("statement, part, why", [
    ("    setattr(cfg.train, name, 4)\n", "cfg.train", "the name of the field it sets is unknown"),
    ("    for key, value in extra.items():\n        setattr(cfg.train, key, value)\n", "cfg.train",
     "the name of the field it sets is unknown"),
    ("    cfg.train.__dict__.update(extra)\n", "cfg.train", "a change through `__dict__`"),
    ("    cfg.__dict__[part].micro_batch_size = 1\n", "cfg", "what it assigns to is unknown"),
    ("    getattr(cfg, part).micro_batch_size = 1\n", "cfg", "what it assigns to is unknown"),
    ("    (cfg.train if fast else cfg.dataset).micro_batch_size = 1\n", "cfg.train, cfg.dataset",
     "what it assigns to is unknown"),
    ("    exec(code)\n", "cfg", "mblint does not run the code exec() is given"),
    ("    eval(code, {'c': cfg.train})\n", "cfg.train", "mblint does not run the code eval() is given"),
    ("    del cfg.train.micro_batch_size\n", "cfg.train", "`del` of a field"),
    ("    match mode:\n        case 'x':\n            cfg.train.micro_batch_size = 1\n", "cfg.train",
     "`match` statements"),
])
def test_a_statement_mblint_does_not_follow_that_may_change_cfg_is_a_gap(tmp_path, statement, part, why):
    line = LINE + statement.startswith("    for ")  # the loop's setattr
    [(rule, found_line, message)] = findings(tmp_path, recipe_with(statement))
    assert (rule, found_line) == ("CV005", line), message
    assert f", so {part} may be changed: every field of {part} is unknown after it" in message and why in message


def test_an_unfollowed_statement_is_a_finding_in_every_format(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(recipe_with("    setattr(cfg.train, name, 4)\n"))
    text = run(["check", "--no-cache", "r.py"], tmp_path)
    assert text.exit_code == 1 and PASSED not in text.stdout
    assert "1 job not fully checked (CV005 config-changed-by-unfollowed-statement: 1)" in text.stdout
    sarif = json.loads(run(["check", "--no-cache", "--format", "sarif", "r.py"], tmp_path).stdout)
    (notification,) = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notification["associatedRule"]["id"] == "CV005" and notification["level"] == "warning"
    assert notification["locations"][0]["physicalLocation"]["region"]["startLine"] == LINE
    github = run(["check", "--no-cache", "--format", "github", "r.py"], tmp_path).stdout
    assert f"::warning file=r.py,line={LINE},col=5" in github and "title=mblint CV005" in github
    ignored = run(["check", "--no-cache", "--ignore", "CV005", "r.py"], tmp_path)
    assert ignored.exit_code == 0 and PASSED in ignored.stdout  # the gap accepted, as for CV001


@pytest.mark.parametrize("statement, imports", [
    ("    setattr(cfg.train, 'train_iters', 4)\n", UNREAD),  # followed
    ("    cfg = copy.deepcopy(cfg)\n", "import copy\n"),  # a copy, followed
    ("    cfg.train.train_iters = int(name)\n", UNREAD),  # an unknown value: silence, not a gap
    ("    exec('x = 1', {})\n", UNREAD),  # a namespace that holds no part of cfg
    ("    print(cfg.train.__dict__)\n", UNREAD),  # a read
    ("    first, *rest = [1, 2, 2]\n    cfg.train.micro_batch_size = rest[-1]\n", UNREAD),  # rest == [2, 2]
])
def test_a_statement_mblint_follows_or_that_cannot_change_cfg_is_no_gap(tmp_path, statement, imports):
    assert [rule for rule, _, _ in findings(tmp_path, recipe_with(statement, imports))] == ["PK001"]


def test_a_recipe_whose_result_mblint_cannot_follow_is_not_analysed_where_it_stopped(tmp_path: Path) -> None:
    """`cfg = copy.copy(cfg)` made the whole recipe unknown: "All checks passed (1 file, 0
    configurations resolved)". Now SY005 at the call that stopped it."""
    [(rule, line, message)] = findings(tmp_path, recipe_with("    cfg = copy.copy(cfg)\n", "import copy\n"))
    assert (rule, line) == ("SY005", LINE)
    assert message.startswith("sft_config was not analysed: the configuration it returns is unknown to mblint after "
                              "copy.copy(), which receives cfg")



def test_hostile_unfollowed_statements_are_bounded_findings(tmp_path: Path) -> None:
    """3,000 names of one part handed to exec (one name per object, four named at most), a
    150-deep getattr target, control characters in the statement: one finding each, its text
    bounded and escaped."""
    aliases = "".join(f"    v{i} = cfg.train\n" for i in range(3000)) + "    exec(code)\n"
    [(rule, _, message)] = findings(tmp_path, recipe_with(aliases))
    assert rule == "CV005" and "so cfg, v0 may be changed" in message and len(message) < 400
    deep = "    " + "getattr(" * 150 + "cfg" + ", part)" * 150 + ".x = 1\n"
    [(rule, _, message)] = findings(tmp_path, recipe_with(deep))
    assert rule == "CV005" and len(message) < 400
    (tmp_path / "r.py").write_text(recipe_with("    setattr(cfg.train, name + '\\x1b]0;pwn\\x07', 4)\n"))
    text = run(["check", "--no-cache", "r.py"], tmp_path).stdout
    assert "CV005" in text and "\x1b" not in text and "\x07" not in text


def test_a_recipe_whose_result_is_unknown_without_a_call_to_blame_is_not_analysed_at_its_def(tmp_path: Path) -> None:
    """`cfg = pickle.loads(...)`: nothing received cfg, and the recipe resolved to nothing, in
    silence ("All checks passed (1 file, 0 configurations resolved)" on main a164b78)."""
    [(rule, line, message)] = findings(tmp_path, recipe_with("    cfg = pickle.loads(b'')\n", "import pickle\n"))
    assert (rule, line) == ("SY005", 7)  # the def line
    assert message == "sft_config was not analysed: the configuration it returns is unknown to mblint"


def test_a_function_given_the_configuration_is_not_said_to_be_unanalysed(tmp_path: Path) -> None:
    """0.5.1's recipes/utils/dataset_utils.py:152 `apply_dataset_override(config: ConfigContainer,
    dataset_type: str, ...) -> ConfigContainer` returns what it is given: unknown alone, which
    is no place where analysis stopped."""
    helper = ("\n\ndef apply_override(config: ConfigContainer, kind: str) -> ConfigContainer:\n"
              "    config.train.micro_batch_size = 1\n    return config\n")
    assert [rule for rule, _, _ in findings(tmp_path, recipe_with("") + helper)] == ["PK001"]
