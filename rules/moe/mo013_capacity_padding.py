from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dispatcher, flex_backend, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()
BALANCING = ("aux_loss", "seq_aux_loss", "global_aux_loss", "none")


class CapacityPadding(Rule):
    id = "MO013"
    name = "capacity-padding"
    severity = Severity.ERROR
    summary = "Token-drop settings Megatron-Core rejects: pad-to-capacity without a capacity factor or with DeepEP; a capacity factor with an unsupported load-balancing type."
    fixable = True
    tags = ("moe",)
    doc = """## What it does
Flags, on the model config:
- `moe_pad_expert_input_to_capacity = True` while `moe_expert_capacity_factor` is None (or
  negative, which Megatron-Core turns into None first);
- `moe_pad_expert_input_to_capacity = True` with the flex dispatcher and the DeepEP backend
  (`moe_flex_dispatcher_backend == "deepep"` or `moe_enable_deepep`);
- `moe_expert_capacity_factor` set (>= 0) with a `moe_router_load_balancing_type` (or an entry
  of the list) other than aux_loss, seq_aux_loss, global_aux_loss or none (e.g. "sinkhorn").

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) raises at job start: "moe_expert_capacity_factor must be set to
use moe_pad_expert_input_to_capacity", "Flex token dispatcher with deepep backend does not support
moe_pad_expert_input_to_capacity", "moe_expert_capacity_factor only works with aux_loss,
seq_aux_loss, global_aux_loss or none load balancing".

## Example
```python
cfg.model.moe_pad_expert_input_to_capacity = True   # moe_expert_capacity_factor left None
```

## Fix
Set a capacity factor (e.g. `moe_expert_capacity_factor = 1.0`; changes which tokens are
dropped, so not automatic), use another dispatcher or backend, or turn padding off
(`moe_pad_expert_input_to_capacity = False`, safe: dropless routing).

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:1600-1607, 1660-1690;
MCore 0.16.1 megatron/core/transformer/transformer_config.py:1074-1081, 1105-1135. Oracle (0.6.2):
`qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config model.moe_pad_expert_input_to_capacity=True` fails
("... deepep backend does not support ..."); `model.moe_expert_capacity_factor=1.0
model.moe_router_load_balancing_type=sinkhorn` fails ("... only works with aux_loss ...").
"""
    valid = [
        HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_expert_capacity_factor = 1.0\n'
        'cfg.model.moe_pad_expert_input_to_capacity = True',
        HF + 'cfg.model.moe_pad_expert_input_to_capacity = False',
        # load-balancing type HF-derived (unknown)
        HF + 'cfg.model.moe_expert_capacity_factor = 1.0',
        HF + 'for f in [None]:\n    cfg.model.moe_expert_capacity_factor = f\n'
        'cfg.model.moe_pad_expert_input_to_capacity = True',
        Example(HF + 'cfg.model.moe_expert_capacity_factor = 1.25\ncfg.model.moe_router_load_balancing_type = "aux_loss"',
                version="0.3"),
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_pad_expert_input_to_capacity = True  # error',
                message="moe_expert_capacity_factor must be set to use moe_pad_expert_input_to_capacity",
                fixed=HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
                      'cfg.model.moe_pad_expert_input_to_capacity = False  # error',
                unsafe=True),
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "deepep"\n'
                'cfg.model.moe_expert_capacity_factor = 1.0\ncfg.model.moe_pad_expert_input_to_capacity = True  # error',
                message="Flex token dispatcher with deepep backend does not support moe_pad_expert_input_to_capacity",
                fixed=HF + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "deepep"\n'
                      'cfg.model.moe_expert_capacity_factor = 1.0\ncfg.model.moe_pad_expert_input_to_capacity = False  # error',
                unsafe=True),
        HF + 'cfg.model.moe_router_load_balancing_type = "sinkhorn"\ncfg.model.moe_expert_capacity_factor = 1.0  # error',
        Example(HF + 'cfg.model.moe_token_dispatcher_type = "alltoall"',
                dotlist=("model.moe_pad_expert_input_to_capacity=true",), version="0.3"),
    ]

    def check(self, cfg, ctx):
        pad = value(cfg, "model.moe_pad_expert_input_to_capacity", False)
        factor = value(cfg, "model.moe_expert_capacity_factor", None)
        if not known(pad) or not known(factor):
            return
        effective = None if isinstance(factor, (int, float)) and factor < 0 else factor
        kind, backend = dispatcher(cfg), flex_backend(cfg)
        deepep = value(cfg, "model.moe_enable_deepep", False)
        if pad is True and known(kind) and kind == "flex" and (backend == "deepep" or deepep is True):
            which = "model.moe_enable_deepep" if deepep is True else "model.moe_flex_dispatcher_backend"
            yield ctx.report(
                cfg,
                "model.moe_pad_expert_input_to_capacity is True with the flex dispatcher and the DeepEP backend; "
                "Megatron-Core raises 'Flex token dispatcher with deepep backend does not support "
                "moe_pad_expert_input_to_capacity'",
                ["model.moe_pad_expert_input_to_capacity", "model.moe_token_dispatcher_type", which],
                fixes=[FixIntent("set", "model.moe_pad_expert_input_to_capacity", False, safe=True,
                                 description="set moe_pad_expert_input_to_capacity to False")],
            )
        elif pad is True and effective is None:
            shown = "None" if factor is None else f"{factor} (negative, treated as None)"
            yield ctx.report(
                cfg,
                f"model.moe_pad_expert_input_to_capacity is True but model.moe_expert_capacity_factor is {shown}; "
                "Megatron-Core raises 'moe_expert_capacity_factor must be set to use "
                "moe_pad_expert_input_to_capacity'",
                ["model.moe_pad_expert_input_to_capacity", "model.moe_expert_capacity_factor"],
                fixes=[FixIntent("set", "model.moe_pad_expert_input_to_capacity", False, safe=True,
                                 description="set moe_pad_expert_input_to_capacity to False")],
            )
        if effective is None:
            return
        balancing = value(cfg, "model.moe_router_load_balancing_type", "aux_loss")
        if not known(balancing):
            return
        kinds = list(balancing) if isinstance(balancing, (list, tuple)) else [balancing]
        if not all(isinstance(k, str) and known(k) for k in kinds):
            return
        bad = [k for k in kinds if k not in BALANCING]
        if bad:
            yield ctx.report(
                cfg,
                f"model.moe_expert_capacity_factor is {factor} but model.moe_router_load_balancing_type is "
                f"{balancing!r}; Megatron-Core raises 'moe_expert_capacity_factor only works with aux_loss, "
                "seq_aux_loss, global_aux_loss or none load balancing'",
                ["model.moe_expert_capacity_factor", "model.moe_router_load_balancing_type"],
            )
