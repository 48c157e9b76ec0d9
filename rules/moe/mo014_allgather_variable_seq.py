from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dispatcher, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


class AllgatherVariableSeq(Rule):
    id = "MO014"
    name = "allgather-variable-seq"
    severity = Severity.ERROR
    summary = "model.variable_seq_lengths = True with the (default) allgather token dispatcher fails in Megatron-Core."
    fixable = True
    tags = ("moe",)
    doc = """## What it does
Flags `model.variable_seq_lengths = True` set by the recipe or an override while the effective
`model.moe_token_dispatcher_type` is "allgather" (Megatron-Core's default, also for dense models).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) raises "Token dispatcher type: allgather does not support variable
sequence length, please use alltoall dispatcher instead." at job start. The check does not look at
whether the model has experts, so a dense model with the default dispatcher fails too.
Megatron-Bridge itself turns `variable_seq_lengths` on for in-batch packing with PP > 1 only
*after* the post-init, which bypasses this check; setting the field by hand does not.

## Example
```python
cfg.model.variable_seq_lengths = True   # moe_token_dispatcher_type left at "allgather"
```

## Fix
Set `model.moe_token_dispatcher_type = "alltoall"` (safe; for a dense model the dispatcher is
unused), or drop `variable_seq_lengths` (in-batch packing with PP > 1 enables it correctly).

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2644-2649; MCore 0.16.1
megatron/core/transformer/transformer_config.py:1827-1832; 0.6.2
megatron/bridge/models/transformer_config.py:176-189 (Bridge sets it after post-init). Oracle:
`llama3_8b_pretrain_2gpu_h100_bf16_config model.variable_seq_lengths=True` fails with that message.
"""
    valid = [
        HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.variable_seq_lengths = True',
        HF + 'cfg.model.moe_token_dispatcher_type = "allgather"\ncfg.model.variable_seq_lengths = False',
        # dispatcher HF-derived (unknown)
        HF + 'cfg.model.variable_seq_lengths = True',
        HF + 'cfg.model.moe_token_dispatcher_type = "allgather"\nfor v in [True]:\n    cfg.model.variable_seq_lengths = v',
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.variable_seq_lengths = True', version="0.3"),
    ]
    invalid = [
        # what Megatron-Core's error proposes; replacing the written "allgather" is unsafe
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "allgather"  # error\ncfg.model.variable_seq_lengths = True',
                message="Token dispatcher type: allgather does not support variable sequence length",
                fixed=HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"  # error\ncfg.model.variable_seq_lengths = True',
                unsafe=True),
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "allgather"', dotlist=("model.variable_seq_lengths=true",)),
        # an override file is edited in place
        Example(HF + 'cfg.model.variable_seq_lengths = True',
                yaml="model:\n  moe_token_dispatcher_type: allgather  # error\n",
                fixed_yaml="model:\n  moe_token_dispatcher_type: alltoall  # error\n",
                unsafe=True),
        Example(HF + 'cfg.model.variable_seq_lengths = True\ncfg.model.moe_token_dispatcher_type = "allgather"  # error',
                version="0.3"),
    ]

    def check(self, cfg, ctx):
        flag = value(cfg, "model.variable_seq_lengths", False)
        kind = dispatcher(cfg)
        if not known(flag, kind) or flag is not True or kind != "allgather":
            return
        yield ctx.report(
            cfg,
            "model.variable_seq_lengths is True but model.moe_token_dispatcher_type is 'allgather'; Megatron-Core "
            "raises 'Token dispatcher type: allgather does not support variable sequence length' at job start",
            ["model.variable_seq_lengths", "model.moe_token_dispatcher_type"],
            fixes=[FixIntent("set", "model.moe_token_dispatcher_type", "alltoall", safe=True,
                             description='set moe_token_dispatcher_type to "alltoall"')],
        )
