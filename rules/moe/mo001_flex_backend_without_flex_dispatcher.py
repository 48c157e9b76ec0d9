from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dispatcher, flex_backend, hf_model, known

MOE = "cfg = _pretrain_common()\n" + hf_model()


def _same_call(first, second) -> bool:
    """Both set by the same run of one function: the same file, reached through the same calls."""
    return first.path == second.path and first.via == second.via


class FlexBackendWithoutFlexDispatcher(Rule):
    id = "MO001"
    name = "flex-backend-without-flex-dispatcher"
    severity = Severity.WARNING
    summary = "A flex dispatcher backend is chosen but moe_token_dispatcher_type is not 'flex'."
    fixable = True
    tags = ("moe",)
    doc = """## What it does
Flags `model.moe_flex_dispatcher_backend` assigned "deepep", "hybridep" or "ncclep" (after the
last assignment of `model.moe_token_dispatcher_type`) while the effective dispatcher type is known
and not "flex". Stays silent when the function that set the backend also chose the non-flex
dispatcher (before it, in the same call): recipes record the backend there on purpose for a later
`apply_flex_dispatcher_backend(cfg.model, cfg.model.moe_flex_dispatcher_backend)`. Silent when the
dispatcher type is unknown (HF-derived, or after `apply_flex_dispatcher_backend`, whose result
depends on the GPU).

## Why it matters
The backend is read only by the flex dispatcher; with "alltoall"/"allgather" DeepEP/HybridEP is
never used and the expected speed-up silently does not happen.

## Example
```python
cfg = base_moe_config()                          # dispatcher "alltoall"
cfg.model.moe_flex_dispatcher_backend = "hybridep"
```

## Fix
Safe: also set `model.moe_token_dispatcher_type = "flex"` (and `moe_shared_expert_overlap = False`),
or call `apply_flex_dispatcher_backend(cfg.model, "hybridep")`.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/flex_dispatcher_backend.py:34-99 (`apply_flex_dispatcher_backend` sets
the type together with the backend); MCore 0.19.2 megatron/core/transformer/transformer_config.py:869-873;
skills moe-comm-overlap SKILL.md.
"""
    valid = [
        MOE + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "hybridep"',
        # the idiom: a non-flex choice with the backend recorded next to it
        MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_flex_dispatcher_backend = "deepep"',
        MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
        'cfg.model.moe_flex_dispatcher_backend = "deepep"\n'
        'apply_flex_dispatcher_backend(cfg.model, cfg.model.moe_flex_dispatcher_backend)',
        # chosen together in one function, however far apart its lines are
        MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n' + 'cfg.train.train_iters = 10\n' * 6
        + 'cfg.model.moe_flex_dispatcher_backend = "hybridep"',
        # dispatcher type HF-derived (unknown)
        MOE + 'cfg.model.moe_flex_dispatcher_backend = "hybridep"',
        MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_flex_dispatcher_backend = None',
    ]
    invalid = [
        # the dispatcher chosen by a base function, the backend by the recipe built on it; base()
        # lies inside the recipe function here, so its line is edited (unsafe: it wrote "alltoall")
        Example('def base():\n    ' + MOE.replace('\n', '\n    ') + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
                '    return cfg\n\n'
                'cfg = base()\n'
                'cfg.model.moe_flex_dispatcher_backend = "hybridep"  # error',
                message="model.moe_flex_dispatcher_backend is 'hybridep', but model.moe_token_dispatcher_type is "
                        "'alltoall'; the hybridep backend is used only with the 'flex' dispatcher",
                fixed='def base():\n    ' + MOE.replace('\n', '\n    ') + 'cfg.model.moe_token_dispatcher_type = "flex"\n'
                      '    return cfg\n\n'
                      'cfg = base()\n'
                      'cfg.model.moe_flex_dispatcher_backend = "hybridep"  # error',
                unsafe=True),
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"',
                dotlist=("model.moe_flex_dispatcher_backend=hybridep",)),
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"',
                yaml="model:\n  moe_flex_dispatcher_backend: deepep  # error\n", version="0.3"),
    ]

    def check(self, cfg, ctx):
        backend = flex_backend(cfg)
        kind = dispatcher(cfg)
        if not known(backend, kind) or backend not in ("deepep", "hybridep", "ncclep") or kind == "flex":
            return
        backend_origins = cfg.origins("model.moe_flex_dispatcher_backend")
        if not backend_origins or backend_origins[-1].kind in ("default", "unknown"):
            return
        last_backend = backend_origins[-1]
        kind_origins = cfg.origins("model.moe_token_dispatcher_type")
        last_kind = kind_origins[-1] if kind_origins else None
        if last_kind is not None and last_kind.kind not in ("default", "unknown"):
            if last_kind.seq > last_backend.seq:
                return  # the dispatcher was chosen after the backend: a deliberate non-flex choice
            if last_backend.kind != "override" and _same_call(last_kind, last_backend):
                return  # chosen together: the backend recorded beside a non-flex choice on purpose
        yield ctx.report(
            cfg,
            f"model.moe_flex_dispatcher_backend is {backend!r}, but model.moe_token_dispatcher_type is {kind!r}; "
            f"the {backend} backend is used only with the 'flex' dispatcher",
            ["model.moe_flex_dispatcher_backend", "model.moe_token_dispatcher_type"],
            primary="model.moe_flex_dispatcher_backend",
            fixes=[FixIntent("set", "model.moe_token_dispatcher_type", "flex", safe=True,
                             description='set moe_token_dispatcher_type to "flex"')],
        )
