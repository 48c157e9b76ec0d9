from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    cuda_graphs_known_on,
    graph_fields,
    hf_model,
    is_model_class,
    known,
    value,
)

MOE = hf_model()


class TeRngTracker(Rule):
    id = "CG003"
    name = "te-rng-tracker"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "CUDA graphs need Transformer Engine's RNG tracker (model.use_te_rng_tracker or rng.te_rng_tracker)."
    fixable = True
    tags = ("cuda-graphs",)
    doc = """## What it does
Flags CUDA graphs turned on (`model.cuda_graph_impl` not "none") while neither
`model.use_te_rng_tracker` nor `rng.te_rng_tracker` is True.

## Why it matters
`ConfigContainer.validate()` ORs the two flags and writes the result into both; then
`GPTModelProvider.provide()` asserts "Transformer engine's RNG tracker is required for
cudagraphs" when the model is built, after the job has started on every rank. Providers that
are not `GPTModelProvider` subclasses (e.g. Mamba/hybrid) do not assert; the finding is a warning
there.

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"   # use_te_rng_tracker left False
```

## Fix
Safe: set `model.use_te_rng_tracker = True`, the flag the provider's assertion reads, next to
the graph switch. One assignment is enough: `validate()` copies either flag onto the other.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/models/gpt_provider.py:233-237; 0.6.2 megatron/bridge/training/config.py:1276-1277;
0.3.1 megatron/bridge/models/gpt_provider.py:213-217; 0.3.1 megatron/bridge/training/config.py:1429-1430.
"""
    valid = [
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.rng.te_rng_tracker = True',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
        'cfg.model.use_te_rng_tracker = True',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "none"',
        'cfg = _pretrain_common()\n' + MOE + 'for impl in ["transformer_engine"]:\n    cfg.model.cuda_graph_impl = impl',
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                'cfg.rng.te_rng_tracker = cfg.model.use_te_rng_tracker = True', version="0.3"),
    ]
    invalid = [
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"  # error',
                message="neither model.use_te_rng_tracker nor rng.te_rng_tracker is True",
                fixed='cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"  # error\n'
                      'cfg.model.use_te_rng_tracker = True',
                unsafe=False),
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"  # error', version="0.3"),
        Example('cfg = _pretrain_common()\n' + MOE, dotlist=("model.cuda_graph_impl=transformer_engine",)),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.on is not True:
            return
        model_flag = value(cfg, "model.use_te_rng_tracker", False)
        rng_flag = value(cfg, "rng.te_rng_tracker", False)
        if not known(model_flag, rng_flag) or model_flag or rng_flag:
            return
        gpt = is_model_class(cfg, "GPTModelProvider")
        severity = None if gpt is True else Severity.WARNING
        yield ctx.report(
            cfg,
            f"model.cuda_graph_impl is {graphs.impl!r}, but neither model.use_te_rng_tracker nor "
            "rng.te_rng_tracker is True; CUDA graphs require Transformer Engine's RNG tracker",
            graph_fields(graphs, cfg) + ["model.use_te_rng_tracker", "rng.te_rng_tracker"],
            primary=graphs.impl_path,
            severity=severity,
            # validate() ORs the two flags into both, so one assignment is the minimal fix
            fixes=[FixIntent("set", "model.use_te_rng_tracker", True, safe=True,
                             description="set model.use_te_rng_tracker to True")],
        )
