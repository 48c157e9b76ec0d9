from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, hf_model, known, value

MODEL = hf_model("meta-llama/Llama-3.1-8B")
UNEVEN = ("model.num_layers_in_first_pipeline_stage", "model.num_layers_in_last_pipeline_stage")
ACCOUNT = ("model.account_for_embedding_in_pipeline_split", "model.account_for_loss_in_pipeline_split")


class PpLayoutConflicts(Rule):
    id = "PB006"
    name = "pp-layout-conflicts"
    severity = Severity.ERROR
    summary = "Pipeline layout, uneven first/last stages and embedding/loss accounting exclude each other."
    tags = ("parallelism", "pipeline")
    doc = """## What it does
Flags `model.pipeline_model_parallel_layout` set together with
`num_layers_in_first/last_pipeline_stage` or `account_for_embedding/loss_in_pipeline_split`,
and `num_layers_in_first/last_pipeline_stage` set together with the `account_for_*` flags.

## Why it matters
They are three different ways to place layers on stages. Megatron-Core's
`TransformerConfig.__post_init__` raises "pipeline_model_parallel_layout cannot be set with
other pipeline layout arguments" / "num_layers_in_first_pipeline_stage and
num_layers_in_last_pipeline_stage cannot be set at the same time with
account_for_embedding_in_pipeline_split and account_for_loss_in_pipeline_split" when
`validate()` finalises the model.

## Example
```python
cfg.model.pipeline_model_parallel_layout = "Et*4|t*4L"
cfg.model.num_layers_in_first_pipeline_stage = 3
```

## Fix
Keep one mechanism; not automatic.

## Versions
0.3.x and 0.6.x.

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1923-1953.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 2\n"
        "cfg.model.pipeline_model_parallel_layout = 'Et*4|t*4L'",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 2\n"
        "cfg.model.num_layers_in_first_pipeline_stage = 3",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers_in_first_pipeline_stage = 3\n"
        "for flag in (True, False):\n    cfg.model.account_for_loss_in_pipeline_split = flag",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.account_for_loss_in_pipeline_split = True",
                version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_layout = 'Et*4|t*4L'\n"
        "cfg.model.num_layers_in_first_pipeline_stage = 3  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers_in_last_pipeline_stage = 3\n"
        "cfg.model.account_for_embedding_in_pipeline_split = True  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers_in_last_pipeline_stage = 3\n"
                "cfg.model.account_for_loss_in_pipeline_split = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        layout = value(cfg, "model.pipeline_model_parallel_layout", None)
        uneven = {p: value(cfg, p, None) for p in UNEVEN}
        account = {p: value(cfg, p, False) for p in ACCOUNT}
        set_uneven = [p for p, v in uneven.items() if v is not None and known(v)]
        set_account = [p for p, v in account.items() if v is True]
        if layout is not None and (known(layout) or isinstance(layout, (list, tuple))):
            others = set_uneven + set_account
            if others:
                shown = ", ".join(f"{p.split('.')[-1]}={cfg.value(p)!r}" for p in others)
                message = (f"model.pipeline_model_parallel_layout is set, and so is {shown}; a layout cannot be "
                           f"combined with other pipeline layout arguments")
                yield ctx.report(cfg, message, ["model.pipeline_model_parallel_layout", *others])
                return
        if set_uneven and set_account:
            shown = ", ".join(f"{p.split('.')[-1]}={cfg.value(p)!r}" for p in set_uneven + set_account)
            message = (f"uneven first/last pipeline stages cannot be combined with embedding/loss accounting "
                       f"in the pipeline split ({shown})")
            yield ctx.report(cfg, message, [*set_uneven, *set_account])
