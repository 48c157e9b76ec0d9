from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, assigned, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()
KNOBS = ("moe_deepep_num_sms", "moe_hybridep_num_sms")
TARGET = "model.moe_flex_dispatcher_num_sms"


class DeprecatedSmKnobs(Rule):
    id = "MO012"
    name = "deprecated-sm-knobs"
    severity = Severity.WARNING
    other_severities = (Severity.ERROR,)
    summary = "moe_deepep_num_sms / moe_hybridep_num_sms are deprecated; two different values without moe_flex_dispatcher_num_sms fail."
    fixable = True
    tags = ("moe", "deprecation")
    doc = """## What it does
Flags an assignment of `model.moe_deepep_num_sms` or `model.moe_hybridep_num_sms` to a value
other than None (warning: deprecated, use `model.moe_flex_dispatcher_num_sms`), and, as an
error, both set to different values while `moe_flex_dispatcher_num_sms` is None.

## Why it matters
Megatron-Core 0.19 (used by Megatron-Bridge 0.6.x) routes the deprecated per-backend knobs into
`moe_flex_dispatcher_num_sms` in `TransformerConfig.__post_init__` with a warning; an explicit
`moe_flex_dispatcher_num_sms` wins, so a deprecated knob next to it is dead. With two different
deprecated values and no unified value it raises "Conflicting deprecated SM-count knobs ...; set a
single moe_flex_dispatcher_num_sms instead." at job start.

## Example
```python
cfg.model.moe_deepep_num_sms = 20
cfg.model.moe_hybridep_num_sms = 16
```

## Fix
Rename the knob to `model.moe_flex_dispatcher_num_sms` (safe when only one is set; with two
values choose the one for the backend in use).

## Versions
0.6.x only (in 0.3.x these are the live per-backend fields).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:926-937 (fields), 1616-1635 (routing
and the conflict error). Oracle: `qwen3_30b_a3b_pretrain_8gpu_h100_bf16_config
model.moe_deepep_num_sms=20 model.moe_hybridep_num_sms=16` fails with that message.
"""
    requires = ("field:moe_flex_dispatcher_num_sms",)
    valid = [
        HF + 'cfg.model.moe_flex_dispatcher_num_sms = 16',
        HF + 'cfg.model.moe_hybridep_num_sms = None',
        HF + 'for n in [16]:\n    cfg.model.moe_hybridep_num_sms = n',
    ]
    invalid = [
        # Megatron-Core 0.19 moves the value to moe_flex_dispatcher_num_sms: the rename is safe
        Example(HF + 'cfg.model.moe_hybridep_num_sms = 16  # finding',
                message="model.moe_hybridep_num_sms = 16 is deprecated in Megatron-Core 0.19; use "
                        "model.moe_flex_dispatcher_num_sms (Megatron-Core routes it there",
                fixed=HF + 'cfg.model.moe_flex_dispatcher_num_sms = 16  # finding',
                unsafe=False),
        # moe_flex_dispatcher_num_sms wins: the deprecated line has no effect and is removed
        Example(HF + 'cfg.model.moe_flex_dispatcher_num_sms = 24\ncfg.model.moe_deepep_num_sms = 20  # finding',
                message="model.moe_flex_dispatcher_num_sms = 24 takes precedence, so it has no effect",
                fixed=HF + 'cfg.model.moe_flex_dispatcher_num_sms = 24',
                unsafe=False),
        HF + 'cfg.model.moe_flex_dispatcher_num_sms = None\ncfg.model.moe_deepep_num_sms = 20\n'
        'cfg.model.moe_hybridep_num_sms = 16  # error',
        Example(HF, dotlist=("model.moe_deepep_num_sms=24",)),
    ]

    def check(self, cfg, ctx):
        values = {name: value(cfg, f"model.{name}", None) for name in KNOBS}
        if not all(known(v) for v in values.values()):
            return
        set_ = {name: v for name, v in values.items() if v is not None and assigned(cfg, f"model.{name}")}
        if not set_:
            return
        flex = value(cfg, TARGET, None)
        paths = [f"model.{name}" for name in set_]
        if len(set(set_.values())) > 1 and flex is None:
            text = ", ".join(f"{name} = {v}" for name, v in set_.items())
            yield ctx.report(
                cfg,
                f"{text} disagree and model.moe_flex_dispatcher_num_sms is None; Megatron-Core raises "
                "'Conflicting deprecated SM-count knobs' (set a single moe_flex_dispatcher_num_sms instead)",
                paths + [TARGET], severity=Severity.ERROR,
            )
            return
        for name, v in set_.items():
            if known(flex) and flex is not None:
                tail = f"model.moe_flex_dispatcher_num_sms = {flex} takes precedence, so it has no effect"
                fixes = [FixIntent("remove", f"model.{name}", safe=True, description=f"remove model.{name}")]
            else:
                tail = "Megatron-Core routes it there with a deprecation warning"
                fixes = [FixIntent("rename", f"model.{name}", new_field=TARGET, safe=True,
                                   description=f"rename model.{name} to {TARGET}")]
            yield ctx.report(
                cfg,
                f"model.{name} = {v} is deprecated in Megatron-Core 0.19; use model.moe_flex_dispatcher_num_sms "
                f"({tail})",
                [f"model.{name}"], fixes=fixes,
            )
