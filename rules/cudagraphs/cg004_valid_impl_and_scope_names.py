from __future__ import annotations

from mblint.rulekit import (
    GRAPH_MODULE_NAMES,
    Example,
    Rule,
    Severity,
    allowed_values,
    graph_module_names,
    hf_model,
    known,
    knows_field,
    schema_of,
    value,
)

HF = "cfg = _pretrain_common()\n" + hf_model()
IMPLS = ("none", "local", "transformer_engine")  # when the schema records no allowed set


class ValidImplAndScopeNames(Rule):
    id = "CG004"
    name = "valid-impl-and-scope-names"
    severity = Severity.ERROR
    summary = "cuda_graph_impl and the CUDA graph module/scope names must be spellings Megatron-Core knows."
    fixable = False
    tags = ("cuda-graphs",)
    doc = """## What it does
Flags `model.cuda_graph_impl` outside none/local/transformer_engine (0.6.x also full_iteration),
a name in `model.cuda_graph_modules` / `model.cuda_graph_scope` that is not a member of
Megatron-Core's enum (attn, mlp, moe, moe_router, moe_preprocess, mamba; full_iteration in 0.3.x;
the deprecated full_iteration/full_iteration_inference in 0.6.x), "full" combined with other
names, and "full_iteration" with the transformer_engine implementation. In 0.6.x names are only
checked with graphs on: `validate_cuda_graph_configuration` clears them when the impl is "none".

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) converts names with `CudaGraphModule[name]` (KeyError on a
misspelling), asserts "Invalid cuda graph implementation: ...", "full scope cannot be used with
other scopes.", and rejects full_iteration with transformer_engine, at job start.

## Example
```python
cfg.model.cuda_graph_impl = "transformer_engine"
cfg.model.cuda_graph_modules = ["attention"]
```

## Fix
Use one of the listed spellings. No automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
MCore 0.19.2 megatron/core/transformer/transformer_config.py:2407-2450, megatron/core/transformer/cuda_graph_config.py:25-59,82-126,
megatron/core/transformer/enums.py:61-98; MCore 0.16.1 megatron/core/transformer/transformer_config.py:1688-1725;
0.6.2 megatron/bridge/utils/cuda_graph.py:134-139. Oracle (0.6.2): modules ['attn','mlpx'] fails with
KeyError 'mlpx'; cuda_graph_impl='local_x' fails "Invalid cuda graph implementation"; ['full','attn']
fails "full scope cannot be used with other scopes."; modules ['full_iteration'] with
transformer_engine fails.
"""
    valid = [
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_modules = ["attn", "mlp"]',
        HF + 'cfg.model.cuda_graph_impl = "none"\ncfg.model.cuda_graph_modules = ["attention"]',
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\nset_cuda_graph_modules(cfg.model, ["attn", "moe_router"])',
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\nfor m in [["attention"]]:\n    cfg.model.cuda_graph_modules = m',
        Example(HF + 'cfg.model.cuda_graph_impl = "local"\ncfg.model.cuda_graph_scope = ["full_iteration"]', version="0.3"),
    ]
    invalid = [
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_modules = ["attn", "mlpx"]  # error',
        HF + 'cfg.model.cuda_graph_impl = "te"  # error',
        HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\ncfg.model.cuda_graph_modules = ["full", "attn"]  # error',
        Example(HF + 'cfg.model.cuda_graph_impl = "full_iteration"  # error', version="0.3"),
        Example(HF + 'cfg.model.cuda_graph_impl = "none"\ncfg.model.cuda_graph_scope = "attn,mpl"  # error', version="0.3"),
        Example(HF + 'cfg.model.cuda_graph_impl = "transformer_engine"\n'
                'cfg.model.cuda_graph_scope = ["full_iteration"]  # error', version="0.3"),
    ]

    def check(self, cfg, ctx):
        impl = value(cfg, "model.cuda_graph_impl", "none")
        if not known(impl):
            return
        allowed = allowed_values(cfg, "cuda_graph_impl", IMPLS)
        if impl not in allowed:
            yield ctx.report(
                cfg,
                f"model.cuda_graph_impl is {impl!r}; Megatron-Core accepts only "
                + ", ".join(repr(a) for a in allowed) + " ('Invalid cuda graph implementation')",
                ["model.cuda_graph_impl"],
            )
            return
        if not knows_field(cfg, "cuda_graph_modules"):
            paths = ("model.cuda_graph_scope",)
            names_ok = self.enum_names(cfg, "cuda_graph_scope")
        else:
            if impl == "none":
                return  # validate_cuda_graph_configuration clears modules and scope
            paths = ("model.cuda_graph_modules", "model.cuda_graph_scope")
            names_ok = self.enum_names(cfg, "cuda_graph_modules") + tuple(
                schema_of(cfg).facts.get("cuda_graph_deprecated_names", ()))
        for path in paths:
            names = graph_module_names(cfg.value(path))
            if not known(names) or not isinstance(names, list):
                continue
            bad = [n for n in names if n != "full" and n not in names_ok]
            if bad:
                yield ctx.report(
                    cfg,
                    f"{path} contains {', '.join(repr(b) for b in bad)}, not a CUDA graph module name; valid names are "
                    + ", ".join(names_ok) + " (Megatron-Core raises KeyError at job start)",
                    [path, "model.cuda_graph_impl"], primary=path,
                )
            elif "full" in names and len(names) > 1:
                yield ctx.report(
                    cfg,
                    f"{path} is {names}; 'full' cannot be combined with other names "
                    "(Megatron-Core asserts 'full scope cannot be used with other scopes.')",
                    [path], primary=path,
                )
            elif impl == "transformer_engine" and "full_iteration" in names:
                yield ctx.report(
                    cfg,
                    f"{path} contains 'full_iteration' but model.cuda_graph_impl is 'transformer_engine'; Megatron-Core "
                    "rejects full-iteration capture with the transformer_engine implementation "
                    + ("(use cuda_graph_impl='full_iteration' with empty modules)" if "full_iteration" in allowed
                       else "(use cuda_graph_impl='local')"),
                    [path, "model.cuda_graph_impl"],
                )

    @staticmethod
    def enum_names(cfg, field: str) -> tuple[str, ...]:
        """Members of the enum TransformerConfig's ``field`` names (CudaGraphScope,
        CudaGraphModule), as the release's Megatron-Core spells them."""
        return schema_of(cfg).enum_members("TransformerConfig", field) or GRAPH_MODULE_NAMES
