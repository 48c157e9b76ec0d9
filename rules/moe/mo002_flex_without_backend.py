from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dispatcher, flex_backend, has_check, hf_model, known

MOE = "cfg = _pretrain_common()\n" + hf_model()


class FlexWithoutBackend(Rule):
    id = "MO002"
    name = "flex-without-backend"
    severity = Severity.ERROR
    other_severities = (Severity.INFO,)
    summary = "The flex token dispatcher needs a backend (deepep, hybridep or ncclep); None fails when the MoE layer is built (main: turned to alltoall)."
    fixable = True
    tags = ("moe",)
    doc = """## What it does
Flags `model.moe_token_dispatcher_type == "flex"` with `model.moe_flex_dispatcher_backend`
None. This is what remains when a recipe clears the backend (the idiom
`moe_flex_dispatcher_backend = None` next to an "alltoall" dispatcher) and a later line or
override switches the dispatcher back to "flex".

## Why it matters
In the releases mblint targets nothing in `ConfigContainer.validate()` resets a backend-less
flex dispatcher (`validate_flex_dispatcher_backend` only checks GPU support of a named backend).
When the MoE layer is built, Megatron-Core's `MoEFlexTokenDispatcher.__init__` matches the
backend against "deepep"/"hybridep"/"ncclep" and otherwise raises
`ValueError: Invalid backend: None`, on every rank after allocation. Megatron-Bridge main
(PR 5740) falls back instead: `validate_flex_dispatcher_backend` turns a backend-less flex
dispatcher into "alltoall", so the job runs, but not with the dispatcher the recipe names. Where
the release's code does that (mblint reads it from the source), the finding is an info.

## Example
```python
cfg.model.moe_flex_dispatcher_backend = None
cfg.model.moe_token_dispatcher_type = "flex"
```

## Fix
Set a backend (`apply_flex_dispatcher_backend(cfg.model, "deepep")` or
`moe_flex_dispatcher_backend = "deepep"`), or use the "alltoall" dispatcher. Proposed: set the
dispatcher to "alltoall" (safe: same numerics, another communication kernel; unsafe when it
replaces a "flex" the recipe wrote); the "deepep" backend is shown as an alternative, never applied.

## Versions
0.3.x to 0.6.x: an error; Megatron-Bridge main (derived from the source at hand): an info.

## Sources
MCore 0.19.2 megatron/core/transformer/moe/token_dispatcher.py:1769-1801 (0.6.2);
MCore 0.16.1 megatron/core/transformer/moe/token_dispatcher.py:1347-1367 (0.3.1);
0.6.2 megatron/bridge/training/flex_dispatcher_backend.py:27-30 (`_fallback_to_alltoall` clears
the backend together with the type), 102-125 (validation does not handle None); Megatron-Bridge
main (commit 067f987, PR 5740) training/flex_dispatcher_backend.py:90-93 (None: falls back to
alltoall), called from validate() at training/config.py:1650-1654.
"""
    valid = [
        MOE + 'cfg.model.moe_token_dispatcher_type = "flex"\ncfg.model.moe_flex_dispatcher_backend = "deepep"',
        MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_flex_dispatcher_backend = None',
        # backend HF-derived (unknown)
        MOE + 'cfg.model.moe_token_dispatcher_type = "flex"',
        MOE + 'cfg.model.moe_flex_dispatcher_backend = None\n'
        'for kind in ["flex"]:\n    cfg.model.moe_token_dispatcher_type = kind',
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "flex"', version="0.3"),
    ]
    invalid = [
        # "alltoall" replaces the "flex" the recipe wrote: unsafe; "deepep" is only an alternative
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_flex_dispatcher_backend = None\n'
                'cfg.model.moe_token_dispatcher_type = "flex"  # error',
                message="model.moe_token_dispatcher_type is 'flex' but model.moe_flex_dispatcher_backend is None",
                fixed=MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.moe_flex_dispatcher_backend = None\n'
                      'cfg.model.moe_token_dispatcher_type = "alltoall"  # error',
                unsafe=True),
        # a command-line override is not fixed: no file to edit
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
                'cfg.model.moe_flex_dispatcher_backend = None',
                dotlist=("model.moe_token_dispatcher_type=flex",),
                fixed=MOE + 'cfg.model.moe_token_dispatcher_type = "alltoall"\n'
                      'cfg.model.moe_flex_dispatcher_backend = None'),
        Example(MOE + 'cfg.model.moe_token_dispatcher_type = "flex"  # error\n'
                'cfg.model.moe_flex_dispatcher_backend = None', version="0.3"),
    ]

    def check(self, cfg, ctx):
        kind, backend = dispatcher(cfg), flex_backend(cfg)
        if not known(kind) or kind != "flex" or backend is not None:
            return
        if has_check(cfg, "flex_without_backend_falls_back"):
            said, severity = ("validate() turns the dispatcher to 'alltoall' at job start: the flex setting does "
                              "nothing", Severity.INFO)
        else:
            said, severity = ("Megatron-Core's flex dispatcher raises 'Invalid backend: None' when the MoE layer is "
                              "built", Severity.ERROR)
        yield ctx.report(
            cfg,
            f"model.moe_token_dispatcher_type is 'flex' but model.moe_flex_dispatcher_backend is None; {said}",
            ["model.moe_token_dispatcher_type", "model.moe_flex_dispatcher_backend"],
            severity=severity,
            fixes=[FixIntent("set", "model.moe_token_dispatcher_type", "alltoall", safe=True,
                             description='set moe_token_dispatcher_type to "alltoall"'),
                   FixIntent("set", "model.moe_flex_dispatcher_backend", "deepep", safe=False, alternative=True,
                             description='or set moe_flex_dispatcher_backend to "deepep" (needs DeepEP installed)')],
        )
