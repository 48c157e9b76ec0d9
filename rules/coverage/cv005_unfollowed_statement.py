from __future__ import annotations

from mblint.rulekit import COVERAGE_TAG, UNFOLLOWED_STATEMENT, Example, Rule, Severity, gaps, report_gap

UNREAD = "from mycompany.settings import name, value, extra, mode, part\n"


class UnfollowedStatement(Rule):
    id = "CV005"
    name = "config-changed-by-unfollowed-statement"
    severity = Severity.WARNING
    summary = "A statement mblint does not follow may change the configuration (or a part of it); what comes after is unchecked."
    tags = (COVERAGE_TAG,)
    doc = """## What it does
Reports a statement of a recipe (or of a helper it calls) that may change the configuration or
one of its parts and that mblint's interpreter does not follow, naming the part and why:
`setattr(cfg.model, name, v)` with a field name mblint does not know (a loop over a dict of
settings), a store through an object it cannot tell (`getattr(cfg, part).x = 1`,
`(cfg.train if fast else cfg.model).x = 1`), a change through `__dict__`
(`cfg.train.__dict__.update(extra)`), `exec`/`eval` of code run with the recipe's variables,
`del cfg.train.x`, a `match` statement, or a statement the interpreter failed on.

A statement mblint does follow is not reported, nor one that cannot reach the configuration:
`setattr(cfg.train, "train_iters", 4)`, `cfg = copy.deepcopy(cfg)` (a copy, followed), a value
mblint does not know (`cfg.train.micro_batch_size = int(os.environ["MBS"])`: the field is
unknown, which is silence, not a gap), a store into a field whose value is unknown
(`cfg.model.extra.x = 1`), `exec(code, {})` with a namespace that holds no part of it. A call
that receives the configuration is CV001's.

## Why it matters
The statement may change any field of the parts it reaches, so mblint treats every one of them
as unknown after it, and the rules that read them say nothing. Without this finding a recipe
whose errors come before `for k, v in overrides.items(): setattr(cfg.train, k, v)` would print
"All checks passed": its findings were not disproved, they were not checked. A warning, as for
CV001: the job may well be correct, but a pre-commit hook must not call it checked; ignore the
rule for the line (`# mblint: ignore[CV005]`) to accept it.

## Example
```python
def my_config(overrides: dict = OVERRIDES):
    cfg = llama32_1b_sft_1gpu_h100_bf16_config()
    cfg.train.micro_batch_size = 3
    for key, value in overrides.items():
        setattr(cfg.train, key, value)      # CV005: every field of cfg.train is unknown after it
    return cfg
```

## Fix
Write the fields the statement sets as plain assignments (`cfg.train.global_batch_size = 64`),
so that mblint reads them; or ignore the rule for the line to accept it. No automatic fix.

## Versions
All.

## Sources
mblint's interpreter: objects a statement it does not follow may change become unknown
(README, "How mblint reads a configuration").
"""
    valid = [
        "cfg = _pretrain_common()\nsetattr(cfg.train, 'train_iters', 4)",
        "import copy\ncfg = _pretrain_common()\ncfg = copy.deepcopy(cfg)",
        UNREAD + "cfg = _pretrain_common()\ncfg.train.train_iters = value",
        UNREAD + "cfg = _pretrain_common()\nexec('x = 1', {})",
        "cfg = _pretrain_common()\nprint(cfg.train.__dict__)",
    ]
    invalid = [
        Example(UNREAD + "cfg = _pretrain_common()\nsetattr(cfg.train, name, value)  # error",
                message="setattr(cfg.train, name, value): the name of the field it sets is unknown to mblint, so "
                        "cfg.train may be changed"),
        Example(UNREAD + "cfg = _pretrain_common()\nfor key, item in extra.items():\n"
                "    setattr(cfg.train, key, item)  # error", message="so cfg.train may be changed"),
        Example(UNREAD + "cfg = _pretrain_common()\ngetattr(cfg, part).train_iters = 4  # error",
                message="what it assigns to is unknown to mblint, so cfg may be changed"),
        Example(UNREAD + "cfg = _pretrain_common()\ncfg.train.__dict__.update(extra)  # error",
                message="a change through `__dict__`"),
        Example(UNREAD + "cfg = _pretrain_common()\nexec(value)  # error",
                message="mblint does not run the code exec() is given, so cfg may be changed"),
        Example("cfg = _pretrain_common()\ndel cfg.train.train_iters  # error",
                message="mblint does not follow `del` of a field, so cfg.train may be changed"),
        Example(UNREAD + "cfg = _pretrain_common()\nmatch mode:  # error\n    case 'fast':\n"
                "        cfg.train.train_iters = 4", message="mblint does not interpret `match` statements"),
    ]

    def check(self, cfg, ctx):
        for gap in gaps(cfg, UNFOLLOWED_STATEMENT):
            yield report_gap(ctx, cfg, gap, (
                f"{gap.subject}: {gap.source}, so {gap.part} may be changed: every field of {gap.part} is unknown "
                "after it, so the checks that read them did not run; write what it sets as plain assignments to "
                "have it checked"))
