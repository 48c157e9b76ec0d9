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
    known,
    value,
)

MOE = hf_model()


class LocalOnlyFullIteration(Rule):
    id = "CG001"
    name = "local-only-full-iteration"
    severity = Severity.ERROR
    summary = 'cuda_graph_impl="local" is only supported for full-iteration CUDA graphs.'
    fixable = True
    requires = ("check:local_graphs_full_iteration_only",)
    tags = ("cuda-graphs",)
    doc = """## What it does
Flags `model.cuda_graph_impl = "local"` when the graph is not a full-iteration graph (no
"full_iteration" in `cuda_graph_modules`/`cuda_graph_scope`) and no local inference graph
(`inference_cuda_graph_scope` "layer"/"block" with no modules) is requested.

## Why it matters
Megatron-Bridge 0.6 only supports the MCore-local graph manager for full-iteration capture.
`validate_cuda_graph_configuration` raises 'Megatron Bridge supports model.cuda_graph_impl="local"
only for full-iteration CUDA graphs ... Use model.cuda_graph_impl="transformer_engine" for scoped
CUDA graph capture' in `ConfigContainer.validate()` and again when the model is built.

## Example
```python
cfg.model.cuda_graph_impl = "local"
cfg.model.cuda_graph_modules = ["attn"]
```

## Fix
Not safe (it changes the graph implementation): set `cuda_graph_impl = "transformer_engine"`,
which captures the same per-layer graphs ("local" in Megatron-Core captures per layer: the listed
modules, or whole layers when none are listed). Whole-iteration capture (`"full_iteration"`) is
the other way out, but it captures more and also needs `check_for_nan_in_loss = False` (CG002).

## Versions
0.6.x. In 0.3.x the local per-layer graph manager is supported.

## Sources
0.6.2 megatron/bridge/utils/cuda_graph.py:121-153 (`is_full_iteration_cuda_graph`,
`validate_cuda_graph_configuration`); 0.6.2 megatron/bridge/training/config.py:1260,1375
(called from `validate`); 0.6.2 megatron/bridge/models/gpt_provider.py:232. Oracle (0.6.2):
llama3_8b_pretrain_config with model.cuda_graph_impl=local fails with that message.
"""
    valid = [
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"\n'
        'cfg.model.cuda_graph_modules = ["full_iteration"]',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"\n'
        'cfg.model.inference_cuda_graph_scope = "block"',
        # modules unknown (assigned in a loop): silent
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"\n'
        'for mods in [["full_iteration"]]:\n    cfg.model.cuda_graph_modules = mods',
    ]
    invalid = [
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"  # error',
                message='model.cuda_graph_impl is "local", but Megatron-Bridge supports "local" only for '
                        'full-iteration CUDA graphs',
                fixed='cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"  # error',
                unsafe=True),
        # with modules: per-layer capture
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"  # error\n'
                'cfg.model.cuda_graph_modules = ["attn", "mlp"]',
                message="with modules ['attn', 'mlp']",
                fixed='cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"  # error\n'
                      'cfg.model.cuda_graph_modules = ["attn", "mlp"]',
                unsafe=True),
        Example('cfg = _pretrain_common()\n' + MOE, dotlist=("model.cuda_graph_impl=local",)),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.impl != "local" or graphs.full_iteration is not False:
            return
        modules = graphs.modules
        inference = value(cfg, "model.inference_cuda_graph_scope", None)
        if not known(modules) or not (inference is None or known(inference)):
            return
        names = set()
        if inference is not None:
            if not isinstance(inference, str):
                return
            names = {part.rsplit(".", 1)[-1] for part in inference.split(",")}
        if not modules and names & {"layer", "block"}:
            return
        scoped = f" with modules {modules}" if modules else ""
        yield ctx.report(
            cfg,
            f'model.cuda_graph_impl is "local"{scoped}, but Megatron-Bridge supports "local" only for '
            f'full-iteration CUDA graphs; use "transformer_engine" for scoped capture or "full_iteration"',
            graph_fields(graphs, cfg),
            # per-layer capture, as "local" asked for (the modules, or whole layers without them)
            fixes=[FixIntent("set", "model.cuda_graph_impl", "transformer_engine", safe=False,
                             description='set cuda_graph_impl to "transformer_engine"')],
        )
