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


class FullIterNoNanCheck(Rule):
    id = "CG002"
    name = "full-iter-no-nan-check"
    severity = Severity.ERROR
    summary = "Full-iteration CUDA graphs need rerun_state_machine.check_for_nan_in_loss = False."
    fixable = True
    tags = ("cuda-graphs",)
    doc = """## What it does
Flags full-iteration CUDA graph capture (0.6.x: `cuda_graph_impl = "full_iteration"`, or
`"local"` with "full_iteration" in the modules/scope; 0.3.x: `"local"` with "full_iteration" in
`cuda_graph_scope`) while `rerun_state_machine.check_for_nan_in_loss` is True (its default).

## Why it matters
The NaN check reads the loss on the host inside the captured region; `ConfigContainer.validate()`
asserts "check_for_nan_in_loss must be disabled when using full_iteration CUDA graph".

## Example
```python
cfg.model.cuda_graph_impl = "full_iteration"   # check_for_nan_in_loss left at True
```

## Fix
Safe: set `rerun_state_machine.check_for_nan_in_loss = False`.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:1369-1374; 0.6.2 megatron/bridge/utils/cuda_graph.py:121-131;
0.3.1 megatron/bridge/training/config.py:1454-1459. Oracle (0.6.2): llama3_8b_pretrain_config with
model.cuda_graph_impl=full_iteration fails with the assertion.
"""
    valid = [
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"\n'
        'cfg.rerun_state_machine.check_for_nan_in_loss = False',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "transformer_engine"',
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"\n'
        'for flag in [False]:\n    cfg.rerun_state_machine.check_for_nan_in_loss = flag',
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"\n'
                'cfg.model.cuda_graph_scope = ["full_iteration"]\n'
                'cfg.rerun_state_machine.check_for_nan_in_loss = False', version="0.3"),
    ]
    invalid = [
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"  # error',
                message="rerun_state_machine.check_for_nan_in_loss is True, but full-iteration CUDA graph capture "
                        "(cuda_graph_impl='full_iteration') requires it to be False",
                fixed='cfg = _pretrain_common()\ncfg.rerun_state_machine.check_for_nan_in_loss = False\n' + MOE
                      + 'cfg.model.cuda_graph_impl = "full_iteration"  # error',
                unsafe=False),
        'cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"\n'
        'cfg.model.cuda_graph_scope = "full_iteration"  # error',
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "local"\n'
                'cfg.model.cuda_graph_scope = ["full_iteration"]  # error', version="0.3"),
        # an override file is edited in place (unsafe: it replaces the value the file wrote)
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"\n'
                'cfg.rerun_state_machine.check_for_nan_in_loss = False',
                yaml="rerun_state_machine:\n  check_for_nan_in_loss: true  # error\n",
                fixed_yaml="rerun_state_machine:\n  check_for_nan_in_loss: false  # error\n",
                unsafe=True),
        # a command-line override is not fixed: no file to edit
        Example('cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"\n'
                'cfg.rerun_state_machine.check_for_nan_in_loss = False',
                dotlist=("rerun_state_machine.check_for_nan_in_loss=true",),
                fixed='cfg = _pretrain_common()\n' + MOE + 'cfg.model.cuda_graph_impl = "full_iteration"\n'
                      'cfg.rerun_state_machine.check_for_nan_in_loss = False'),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.full_iteration is not True:
            return
        nan = value(cfg, "rerun_state_machine.check_for_nan_in_loss", True)
        if not known(nan) or not nan:
            return
        yield ctx.report(
            cfg,
            "rerun_state_machine.check_for_nan_in_loss is True, but full-iteration CUDA graph capture "
            f"(cuda_graph_impl={graphs.impl!r}) requires it to be False",
            graph_fields(graphs, cfg) + ["rerun_state_machine.check_for_nan_in_loss"],
            fixes=[FixIntent("set", "rerun_state_machine.check_for_nan_in_loss", False, safe=True,
                             description="set rerun_state_machine.check_for_nan_in_loss to False")],
        )
