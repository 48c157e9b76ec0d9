from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, has_check, hf_model, int_values, parallel

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class SpWithoutTp(Rule):
    id = "PB008"
    name = "sp-without-tp"
    severity = Severity.INFO
    other_severities = (Severity.ERROR,)
    summary = "sequence_parallel with tensor_model_parallel_size 1 is silently turned off."
    fixable = True
    tags = ("parallelism", "sequence-parallel")
    doc = """## What it does
Flags `model.sequence_parallel = True` with `model.tensor_model_parallel_size == 1`.

## Why it matters
Sequence parallelism shards activations across the tensor-parallel group; with TP=1 there is
no group. Megatron-Bridge's model config silently sets `sequence_parallel = False` at
finalisation in 0.6.x (Megatron-Core alone would raise), so the setting does nothing, and
anything derived from it (e.g. padding multiples) may be reasoned about wrongly: info. In 0.3.x
`finalize()` runs Megatron-Core's checks as they are, and Megatron-Core raises "Cannot use
sequence parallelism without tensor parallelism": an error. (Schema check
`sequence_parallel_off_without_tp`.)

## Example
```python
cfg.model.tensor_model_parallel_size = 1
cfg.model.sequence_parallel = True
```

## Fix
Safe: drop the setting (`model.sequence_parallel = False`), or raise TP.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/models/transformer_config.py:179-180, 255-256, 309-310; Megatron-Core
0.19.2 megatron/core/model_parallel_config.py:502-504 (SP requires TP > 1); 0.3.1
megatron/bridge/models/transformer_config.py:83-92, training/config.py:1414-1415; Megatron-Core
0.16.1 megatron/core/model_parallel_config.py:409-411;
skills/mbridge-perf-parallelism-strategies/SKILL.md (Pitfalls 3).
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 2\ncfg.model.sequence_parallel = True",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.sequence_parallel = False",
        "cfg = _pretrain_common()\n" + MODEL + "for tp in (1, 2):\n    cfg.model.tensor_model_parallel_size = tp\n"
        "cfg.model.sequence_parallel = True",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 4\n"
                "cfg.model.sequence_parallel = True", version="0.3"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.sequence_parallel = True  # error",
                message="Megatron-Bridge silently turns sequence parallelism off", unsafe=True,
                fixed="cfg = _pretrain_common()\n" + MODEL + "cfg.model.sequence_parallel = False  # error"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.sequence_parallel = True  # error\n"
                "cfg.model.tensor_model_parallel_size = 1", version="0.3",
                message="Cannot use sequence parallelism without tensor parallelism", unsafe=True,
                fixed="cfg = _pretrain_common()\n" + MODEL + "cfg.model.sequence_parallel = False  # error\n"
                      "cfg.model.tensor_model_parallel_size = 1"),
    ]

    def check(self, cfg, ctx):
        par = parallel(cfg)
        if par.sp is not True or not int_values(par.tp) or par.tp > 1:
            return
        turned_off = has_check(cfg, "sequence_parallel_off_without_tp")
        if turned_off:
            message = (f"model.sequence_parallel is True, but tensor_model_parallel_size is {par.tp}; "
                       f"Megatron-Bridge silently turns sequence parallelism off without TP > 1")
        else:
            message = (f"model.sequence_parallel is True, but tensor_model_parallel_size is {par.tp}; Megatron-Core "
                       f"raises \"Cannot use sequence parallelism without tensor parallelism\" when validate() "
                       f"finalizes the model")
        yield ctx.report(cfg, message, ["model.sequence_parallel", "model.tensor_model_parallel_size"],
                         severity=None if turned_off else Severity.ERROR,
                         fixes=[FixIntent("set", "model.sequence_parallel", False,
                                          description="set sequence_parallel to False")])
