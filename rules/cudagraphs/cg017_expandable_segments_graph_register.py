from __future__ import annotations

from mblint.rulekit import (
    ABSENT,
    Example,
    FixIntent,
    Rule,
    Severity,
    cuda_graphs,
    cuda_graphs_known_on,
    graph_fields,
    hf_model,
    known,
)

HF = ('cfg = _pretrain_common()\n'
      + hf_model() +
      'cfg.model.cuda_graph_impl = "transformer_engine"\n')
ALLOC = "PYTORCH_CUDA_ALLOC_CONF"
REG = "NCCL_GRAPH_REGISTER"


class ExpandableSegmentsGraphRegister(Rule):
    id = "CG017"
    name = "expandable-segments-graph-register"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "CUDA graphs with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True need NCCL_GRAPH_REGISTER=0."
    fixable = True
    requires = ("field:env_vars",)
    tags = ("cuda-graphs", "environment")
    doc = """## What it does
With CUDA graphs on, flags `cfg.env_vars` whose `PYTORCH_CUDA_ALLOC_CONF` contains
`expandable_segments:True` while `NCCL_GRAPH_REGISTER` is set to anything but 0 (error with the
transformer_engine implementation) or is missing from `cfg.env_vars` (warning: the launcher's
environment may still provide it).

## Why it matters
`apply_environment_variables()` copies `cfg.env_vars` into the process environment
(`os.environ.setdefault`, so launcher values win). Megatron-Core's `TECudaGraphHelper.__init__`
asserts "Setting NCCL_GRAPH_REGISTER=0 to avoid illegal memory access when using CUDA Graph with
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True." when the graphs are set up. The value is compared as a string: only "0"
passes (a bool False becomes "False").

## Example
```python
cfg.env_vars = {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "NCCL_GRAPH_REGISTER": 1}
cfg.model.cuda_graph_impl = "transformer_engine"
```

## Fix
Safe: set `cfg.env_vars["NCCL_GRAPH_REGISTER"] = 0` (the recipes' `COMMON_RECIPE_ENV_VARS` does).

## Versions
0.6.x only: 0.3.x has no `cfg.env_vars` (the environment comes from the launcher).

## Sources
MCore 0.19.2 megatron/core/transformer/cuda_graphs.py:2095-2108; 0.6.2
megatron/bridge/training/config.py:1845-1850; 0.6.2 megatron/bridge/recipes/utils/environment_utils.py:22-32.
"""
    valid = [
        HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True", "{REG}": 0}}',
        HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True", "{REG}": "0"}}',
        HF.replace('"transformer_engine"', '"none"') + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True", "{REG}": 1}}',
        HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:False", "{REG}": 1}}',
        HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True"}}\nfor v in [1]:\n    cfg.env_vars["{REG}"] = v',
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True", "{REG}": 1}}  # error',
                message=f"env_vars['{REG}'] is 1 (the process sees '1', not '0')",
                fixed=HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True", "{REG}": 0}}  # error',
                unsafe=True),
        HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True", "{REG}": False}}  # error',
        Example(HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True"}}  # finding',
                message=f"env_vars does not set {REG}",
                fixed=HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True"}}  # finding\n'
                      f'cfg.env_vars["{REG}"] = 0',
                unsafe=False),
        Example(HF + f'cfg.env_vars = {{"{ALLOC}": "expandable_segments:True", "{REG}": 0}}',
                dotlist=(f"env_vars.{REG}=1",)),
    ]

    precondition = cuda_graphs_known_on

    def check(self, cfg, ctx):
        graphs = cuda_graphs(cfg)
        if graphs.on is not True or cfg.type_of("env_vars") != "dict":
            return
        alloc = cfg.value(f"env_vars.{ALLOC}")
        if not known(alloc) or "expandable_segments:True" not in str(alloc):
            return
        reg = cfg.value(f"env_vars.{REG}")
        fields = [f"env_vars.{ALLOC}", f"env_vars.{REG}"] + graph_fields(graphs, cfg)
        fix = [FixIntent("set", f"env_vars.{REG}", 0, safe=True, description=f"set env_vars[{REG!r}] = 0")]
        if reg is ABSENT:
            yield ctx.report(
                cfg,
                f"CUDA graphs are on (cuda_graph_impl {graphs.impl!r}) and env_vars[{ALLOC!r}] = {alloc!r} enables "
                f"expandable segments, but env_vars does not set {REG}; unless the launcher exports {REG}=0, "
                "graph capture asserts (illegal memory access guard)",
                fields, primary=f"env_vars.{ALLOC}", severity=Severity.WARNING,
                fixes=[FixIntent("add", f"env_vars.{REG}", 0, safe=True, description=f"add env_vars[{REG!r}] = 0")],
            )
            return
        if not known(reg) or str(reg) == "0":
            return
        hard = graphs.te is True
        yield ctx.report(
            cfg,
            f"env_vars[{REG!r}] is {reg!r} (the process sees {str(reg)!r}, not '0') while env_vars[{ALLOC!r}] = "
            f"{alloc!r} and CUDA graphs are on (cuda_graph_impl {graphs.impl!r}); Megatron-Core asserts "
            f"'Setting {REG}=0 to avoid illegal memory access when using CUDA Graph with "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True.'",
            fields, severity=None if hard else Severity.WARNING, fixes=fix,
        )
