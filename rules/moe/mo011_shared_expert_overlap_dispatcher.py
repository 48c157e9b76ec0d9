from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dispatcher, has_check, hf_model, known, value

HF = ('cfg = _pretrain_common()\n'
      + hf_model() +
      'cfg.model.moe_shared_expert_intermediate_size = 2048\n')


class SharedExpertOverlapDispatcher(Rule):
    id = "MO011"
    name = "shared-expert-overlap-dispatcher"
    severity = Severity.ERROR
    summary = "moe_shared_expert_overlap works only with the alltoall (0.6.x: or flex) token dispatcher."
    fixable = True
    tags = ("moe", "overlap")
    doc = """## What it does
Flags `model.moe_shared_expert_overlap = True` on a model with shared experts
(`moe_shared_expert_intermediate_size` not None) whose `moe_token_dispatcher_type` is not
"alltoall" or "flex" (0.3.x: not "alltoall"). The dispatcher defaults to "allgather".

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) raises "moe_shared_expert_overlap only works with alltoall or flex
token dispatcher." at job start.

## Example
```python
cfg.model.moe_token_dispatcher_type = "allgather"
cfg.model.moe_shared_expert_overlap = True
```

## Fix
Safe: set `moe_shared_expert_overlap = False`, or switch the dispatcher to "alltoall".

## Versions
0.3.x (Megatron-Core 0.16: alltoall only) and 0.6.x (alltoall or flex).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1636-1650;
MCore 0.16.1 megatron/core/transformer/transformer_config.py:1090-1095. Oracle:
`qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config model.moe_token_dispatcher_type=allgather
model.moe_shared_expert_overlap=True model.moe_shared_expert_intermediate_size=1024` fails with
that message.
"""
    valid = [
        HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_shared_expert_overlap = True',
        HF + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_shared_expert_overlap = True',
        HF + 'cfg.model.moe_token_dispatcher_type = "allgather"\ncfg.model.moe_shared_expert_overlap = False',
        # dispatcher HF-derived (unknown)
        HF + 'cfg.model.moe_shared_expert_overlap = True',
        HF + 'cfg.model.moe_shared_expert_intermediate_size = None\n'
        'cfg.model.moe_token_dispatcher_type = "allgather"\ncfg.model.moe_shared_expert_overlap = True',
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_shared_expert_overlap = True',
                version="0.3"),
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_shared_expert_overlap = True  # error\n'
                'cfg.model.moe_token_dispatcher_type = "allgather"',
                message="but model.moe_token_dispatcher_type is 'allgather'; Megatron-Core requires 'alltoall' or 'flex'",
                fixed=HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_shared_expert_overlap = False  # error\n'
                      'cfg.model.moe_token_dispatcher_type = "allgather"',
                unsafe=True),
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_shared_expert_overlap = True',
                dotlist=("model.moe_token_dispatcher_type=allgather",)),
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "flex"\n'
                'cfg.model.moe_shared_expert_overlap = True  # error', version="0.3"),
    ]

    def check(self, cfg, ctx):
        overlap = value(cfg, "model.moe_shared_expert_overlap", False)
        size = value(cfg, "model.moe_shared_expert_intermediate_size", None)
        kind = dispatcher(cfg)
        if not known(overlap, kind) or overlap is not True or size is None or not known(size):
            return
        allowed = ("alltoall", "flex") if has_check(cfg, "shared_expert_overlap_allows_flex") else ("alltoall",)
        if kind in allowed:
            return
        names = " or ".join(repr(a) for a in allowed)
        yield ctx.report(
            cfg,
            f"model.moe_shared_expert_overlap is True with shared experts (moe_shared_expert_intermediate_size = "
            f"{size}), but model.moe_token_dispatcher_type is {kind!r}; Megatron-Core requires {names} "
            "('moe_shared_expert_overlap only works with alltoall or flex token dispatcher')",
            ["model.moe_shared_expert_overlap", "model.moe_token_dispatcher_type"],
            fixes=[FixIntent("set", "model.moe_shared_expert_overlap", False, safe=True,
                             description="set moe_shared_expert_overlap to False")],
        )
