from __future__ import annotations

from mblint.rulekit import COVERAGE_TAG, UNFOLLOWED_CALL, Example, Rule, Severity, gaps, report_gap

HOW_TO_PROVIDE = ("give the folder holding its module with --search-path or `search-paths` in the settings, "
                  "or ignore CV001 for this line to accept it")


class UnfollowedCall(Rule):
    id = "CV001"
    name = "config-handed-to-unfollowed-call"
    severity = Severity.WARNING
    summary = "The configuration (or a part of it) is handed to a call mblint cannot follow; what comes after is unchecked."
    tags = (COVERAGE_TAG,)
    doc = """## What it does
Reports a call that receives the configuration or one of its parts (`cfg`, `cfg.model`, a
dataset config) and that mblint cannot follow: a function imported from a module it cannot
read (a team package not on its import roots), a method of a config object it does not model,
a call whose arguments it cannot spread out. A method whose body cannot change its object (it
only reads `self`, as `ConfigContainer.get_data_parallel_size` or a `validate()` that only
checks) is no gap for that object: the schema lists such methods per class, read from the
Megatron-Bridge source, and one that is `return replace(self, split=split)`
(`HFDatasetSourceConfig.with_split`) gives a copy with the field it sets. It names the call, what it received and the import
the callee came from.

## Why it matters
The call may change any field of what it received, so mblint treats every one of them as
unknown after it, and the rules that read them say nothing. Without this finding, a recipe
whose errors come before `apply_cluster_tweaks(cfg)` would print "All checks passed": the
findings it had were not disproved, they were not checked. A warning, not an error: the job may
well be correct, but a pre-commit hook must not call it checked; ignore the rule for the line
(`# mblint: ignore[CV001]`) to accept it.

## Example
```python
from mycompany.tweaks import apply_cluster_tweaks   # not on mblint's import roots

def my_config():
    cfg = llama32_1b_sft_1gpu_h100_bf16_config()
    cfg.train.micro_batch_size = 3
    apply_cluster_tweaks(cfg)                        # CV001: every field is unknown after it
    return cfg
```

## Fix
Give mblint the folder holding the module (`--search-path`, `search-paths` in the settings),
so that it reads the helper; or set the fields the helper sets in the recipe itself. No
automatic fix.

## Versions
All.

## Sources
mblint's interpreter: objects handed to a call it cannot follow become unknown
(README, "How mblint reads a configuration").
"""
    valid = [
        # an unreadable helper that receives no part of the configuration
        "cfg = _pretrain_common()\nfrom mycompany.tweaks import cluster_name\ncfg.logger.wandb_exp_name = cluster_name()",
        # a plain value taken from the configuration
        "cfg = _pretrain_common()\nprint(cfg.train.micro_batch_size)",
        # a method that only reads the configuration (training/config.py: get_data_parallel_size)
        "cfg = _pretrain_common()\ncfg.get_data_parallel_size(8)",
    ]
    invalid = [
        Example("cfg = _pretrain_common()\nfrom mycompany.tweaks import apply_cluster_tweaks\n"
                "apply_cluster_tweaks(cfg)  # error",
                message="apply_cluster_tweaks() receives cfg and mblint cannot follow it (imported on line"),
        Example("cfg = _pretrain_common()\nimport mycompany.tweaks\nmycompany.tweaks.apply(cfg.train)  # error",
                message="receives cfg.train"),
    ]

    def check(self, cfg, ctx):
        for gap in gaps(cfg, UNFOLLOWED_CALL):
            source = f" ({gap.source})" if gap.source else ""
            advice = HOW_TO_PROVIDE if gap.source else "set what it sets in the recipe to have it checked"
            yield report_gap(ctx, cfg, gap, (
                f"{gap.subject} receives {gap.part} and mblint cannot follow it{source}: every field of "
                f"{gap.part} it may change is unknown after this call, so the checks that read them did not "
                f"run; {advice}"))
