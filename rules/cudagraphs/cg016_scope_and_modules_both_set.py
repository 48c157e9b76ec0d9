from __future__ import annotations

from mblint.rulekit import ABSENT, Example, FixIntent, Rule, Severity, cuda_graphs, hf_model, known, value

HF = "cfg = _pretrain_common()\n" + hf_model()


def _empty_modules(raw) -> bool:
    return raw is None or raw == "full" or (isinstance(raw, (list, tuple)) and len(raw) == 0)


class ScopeAndModulesBothSet(Rule):
    id = "CG016"
    name = "scope-and-modules-both-set"
    severity = Severity.ERROR
    summary = "cuda_graph_scope (deprecated) and cuda_graph_modules cannot both be set; full_iteration needs empty modules."
    fixable = True
    requires = ("field:cuda_graph_modules",)
    tags = ("cuda-graphs",)
    doc = """## What it does
With `model.cuda_graph_impl` not "none", flags
- `model.cuda_graph_scope` not None (any value, "full" included) while `model.cuda_graph_modules`
  is something other than "full", None or []: typically a recipe that sets
  `cuda_graph_scope = "full"` and later assigns `cuda_graph_modules` directly (the helper
  `set_cuda_graph_modules()` resets the scope to None and is fine);
- `cuda_graph_impl = "full_iteration"` with per-layer modules (in either field).
With the impl "none", `validate_cuda_graph_configuration` clears both fields first.

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "cuda_graph_scope and cuda_graph_modules cannot be set
together." and 'cuda_graph_modules must be empty when cuda_graph_impl="full_iteration".' at job
start.

## Example
```python
cfg.model.cuda_graph_scope = "full"          # recipe line
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.cuda_graph_modules = ["attn"]       # added later
```

## Fix
Safe: set `model.cuda_graph_scope = None` (or use `set_cuda_graph_modules(cfg.model, [...])`);
for full_iteration, clear the modules.

## Versions
0.6.x only (0.3.x has only `cuda_graph_scope`).

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2383-2405, 2461-2463;
0.6.2 megatron/bridge/utils/cuda_graph.py:77-92 (`set_cuda_graph_modules` sets the scope to None),
134-139 (impl "none" clears both); 0.6.2 megatron/bridge/training/config.py:1258-1262. Oracle:
llama3_8b_pretrain_2gpu_h100_bf16_config (scope "full") with cuda_graph_impl='transformer_engine'
and cuda_graph_modules=['attn'] fails with the first message; cuda_graph_impl='full_iteration' with
modules ['attn'] or scope ['attn'] fails with the second; with cuda_graph_impl='none' it passes.
"""
    valid = [
        HF + 'cfg.model.cuda_graph_scope = "full"\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
        'set_cuda_graph_modules(cfg.model, ["attn"])',
        HF + 'cfg.model.cuda_graph_scope = "full"\ncfg.model.cuda_graph_impl = "transformer_engine"',
        HF + 'cfg.model.cuda_graph_scope = "full"\ncfg.model.cuda_graph_impl = "none"\n'
        'cfg.model.cuda_graph_modules = ["attn"]',
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_scope = "attn"',
        HF + 'cfg.model.cuda_graph_scope = "full"\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
        'for m in [["attn"]]:\n    cfg.model.cuda_graph_modules = m',
        HF + 'cfg.model.cuda_graph_impl = "full_iteration"\ncfg.model.cuda_graph_modules = []',
    ]
    invalid = [
        # the fixes replace values the recipe wrote: unsafe
        Example(HF + 'cfg.model.cuda_graph_scope = "full"  # error\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
                'cfg.model.cuda_graph_modules = ["attn"]',
                message="model.cuda_graph_scope is 'full' and model.cuda_graph_modules is ['attn']",
                fixed=HF + 'cfg.model.cuda_graph_scope = None  # error\ncfg.model.cuda_graph_impl = "transformer_engine"\n'
                      'cfg.model.cuda_graph_modules = ["attn"]',
                unsafe=True),
        Example(HF + 'cfg.model.cuda_graph_scope = "full"\ncfg.model.cuda_graph_impl = "transformer_engine"',
                dotlist=("model.cuda_graph_modules=[attn,mlp]",),
                fixed=HF + 'cfg.model.cuda_graph_scope = None\ncfg.model.cuda_graph_impl = "transformer_engine"',
                unsafe=True),
        Example(HF + 'cfg.model.cuda_graph_modules = ["attn"]  # error\ncfg.model.cuda_graph_impl = "full_iteration"',
                message="cuda_graph_modules must be empty when cuda_graph_impl",
                fixed=HF + 'cfg.model.cuda_graph_modules = []  # error\ncfg.model.cuda_graph_impl = "full_iteration"',
                unsafe=True),
    ]

    def check(self, cfg, ctx):
        impl = value(cfg, "model.cuda_graph_impl", "none")
        if not known(impl) or impl == "none":
            return
        scope = cfg.value("model.cuda_graph_scope")
        modules = cfg.value("model.cuda_graph_modules")
        if modules is ABSENT:
            modules = "full"
        if scope is not ABSENT and scope is not None and known(scope) and known(modules) \
                and not _empty_modules(modules):
            yield ctx.report(
                cfg,
                f"model.cuda_graph_scope is {scope!r} and model.cuda_graph_modules is {modules!r} (cuda_graph_impl "
                f"{impl!r}); Megatron-Core asserts 'cuda_graph_scope and cuda_graph_modules cannot be set together.' "
                "Set cuda_graph_scope to None or use set_cuda_graph_modules()",
                ["model.cuda_graph_scope", "model.cuda_graph_modules"],
                fixes=[FixIntent("set", "model.cuda_graph_scope", None, safe=True,
                                 description="set model.cuda_graph_scope to None")],
            )
            return
        if impl != "full_iteration":
            return
        graphs = cuda_graphs(cfg)
        names = graphs.modules
        if known(names) and names:
            fields = [p for p in graphs.modules_paths if known(cfg.value(p)) and cfg.value(p) not in (None, "full", [])]
            yield ctx.report(
                cfg,
                f"model.cuda_graph_impl is 'full_iteration' but the CUDA graph modules are {names}; Megatron-Core "
                "asserts 'cuda_graph_modules must be empty when cuda_graph_impl=\"full_iteration\".'",
                ["model.cuda_graph_impl"] + fields,
                fixes=[FixIntent("set", graphs.modules_path, [], safe=True,
                                 description="set model.cuda_graph_modules to []")],
            )
