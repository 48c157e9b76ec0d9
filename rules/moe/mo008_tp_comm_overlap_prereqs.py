from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, comm_overlap_present, known, parallel, value

# A provider class mblint knows: an AutoBridge model without its config.json may be a provider
# whose finalize() turns sequence parallelism on when TP > 1.
BASE = ('cfg = _pretrain_common()\n'
        'from megatron.bridge.models import GPTModelProvider\n'
        'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n')
OVERLAP = 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)\n'


class TpCommOverlapPrereqs(Rule):
    id = "MO008"
    name = "tp-comm-overlap-prereqs"
    severity = Severity.WARNING
    summary = "comm_overlap.tp_comm_overlap is silently turned off when sequence parallelism is off (TP >= 2)."
    fixable = True
    tags = ("overlap", "parallelism")
    doc = """## What it does
Flags `comm_overlap.tp_comm_overlap = True` with tensor parallelism (TP >= 2) while
`model.sequence_parallel` is False.

## Why it matters
`CommOverlapConfig._get_model_comm_overlap_cfgs()` (run by `comm_overlap.setup()` in
`runtime_config_update`) logs "Disabling tensor parallel communication overlap due to ..." and
sets the flag to False: the job trains without the overlap the recipe asked for, which is only
visible in the log.

With TP 1 the same code turns the flag off too ("... due to TP size < 2"), but that is not
reported: there is no tensor-parallel communication to overlap, so the run is the same either
way, and many shared recipes keep the flag on for their TP > 1 variants (93 of 575 warnings on
the 0.6.2 recipes were this, and nobody would act on them).

## Example
```python
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=True)
cfg.model.tensor_model_parallel_size = 4
cfg.model.sequence_parallel = False
```

## Fix
Unsafe: set `model.sequence_parallel = True` (changes the activation layout; the sequence
length must then divide by TP); the alternative, `tp_comm_overlap = False` (what runs today), is
shown.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/comm_overlap.py:440-450; 0.3.1 megatron/bridge/training/comm_overlap.py:439-448.
"""
    valid = [
        BASE + OVERLAP + 'cfg.model.tensor_model_parallel_size = 2\ncfg.model.sequence_parallel = True',
        BASE + 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\ncfg.model.tensor_model_parallel_size = 1',
        BASE + 'cfg.comm_overlap = None\ncfg.model.tensor_model_parallel_size = 1',
        # TP 1: nothing to overlap; Megatron-Bridge turns the flag off and the run is the same
        BASE + 'cfg.model.tensor_model_parallel_size = 1\n' + OVERLAP,
        BASE + OVERLAP + 'cfg.model.tensor_model_parallel_size = 2\n'
        'for sp in [False]:\n    cfg.model.sequence_parallel = sp',
        Example(BASE + OVERLAP + 'cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = True',
                version="0.3"),
    ]
    invalid = [
        # sequence parallelism on; "tp_comm_overlap = False" is only the alternative
        Example(BASE + OVERLAP + 'cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = False  # error',
                message="model.sequence_parallel is False (needs True)",
                fixed=BASE + OVERLAP + 'cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = True  # error',
                unsafe=True),
        Example(BASE + OVERLAP + 'cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = True',
                dotlist=("model.sequence_parallel=false",), version="0.3"),
    ]

    def check(self, cfg, ctx):
        if comm_overlap_present(cfg) is not True:
            return
        flag = value(cfg, "comm_overlap.tp_comm_overlap", False)
        if flag is not True:
            return
        par = parallel(cfg)
        if not known(par.tp) or par.tp < 2 or not known(par.sp) or par.sp:
            return  # TP 1: nothing to overlap, the run is the same (see the doc)
        fields = ["comm_overlap.tp_comm_overlap", "model.sequence_parallel", "model.tensor_model_parallel_size"]
        fixes = [FixIntent("set", "model.sequence_parallel", True, safe=False,
                           description="set model.sequence_parallel to True"),
                 FixIntent("set", "comm_overlap.tp_comm_overlap", False, safe=True, alternative=True,
                           description="or set comm_overlap.tp_comm_overlap to False (what runs today)")]
        yield ctx.report(
            cfg,
            "comm_overlap.tp_comm_overlap is True, but model.sequence_parallel is False (needs True); "
            "comm_overlap.setup() logs a warning and silently disables tensor-parallel communication overlap",
            fields, fixes=fixes,
        )
