from __future__ import annotations

from mblint.rulekit import (
    ABSENT,
    Example,
    FixIntent,
    Rule,
    Severity,
    hybridep,
    hybridep_known_on,
    int_values,
    known,
    parallel,
)

ENV = "NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN"
HEP = ('cfg = _pretrain_common()\n'
       'cfg.model = AutoBridge.from_hf_pretrained("x").to_megatron_provider(load_weights=False)\n'
       'cfg.model.moe_token_dispatcher_type = "flex"\n'
       'cfg.model.moe_flex_dispatcher_backend = "hybridep"\n'
       'cfg.model.expert_model_parallel_size = 8\n')


def _as_int(raw):
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return None


class HybridepTopologyEnv(Rule):
    id = "MO016"
    name = "hybridep-topology-env"
    severity = Severity.WARNING
    summary = "HybridEP needs NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN set to at most min(EP, NVLink domain size)."
    fixable = True
    requires = ("field:env_vars",)
    tags = ("moe", "environment")
    doc = """## What it does
With the flex dispatcher on the HybridEP backend, flags `cfg.env_vars` that lacks
`NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN`, or sets it above `expert_model_parallel_size` or
above `NVLINK_DOMAIN_SIZE` when that is also set in `cfg.env_vars`.

## Why it matters
HybridEP lays out its intra-node (NVLink) and inter-node (RDMA) communication from this variable.
Megatron-Bridge's performance launcher sets it to min(EP, GPUs per NVLink domain) (8 on
H100/B200 NVL8 nodes, up to 72 on GB200/GB300 NVL72); a wrong value costs performance and, per
the dispatcher-selection guide, sometimes correctness. `apply_environment_variables()` uses
`os.environ.setdefault`, so a launcher or shell may still provide it: hence a warning.

## Example
```python
apply_flex_dispatcher_backend(cfg.model, "hybridep")
cfg.model.expert_model_parallel_size = 8
cfg.env_vars = {"NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN": 16}
```

## Fix
Set `cfg.env_vars["NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN"]` to min(EP, NVLink domain size),
e.g. `min(EP, 8)` on NVL8 nodes (safe: a launch setting).

## Versions
0.6.x only: 0.3.x has no `cfg.env_vars` (the environment comes from the launcher).

## Sources
skills dispatcher-selection SKILL.md:141-146; scripts/performance/utils/utils.py:291-331 (main);
0.6.2 megatron/bridge/training/config.py:1845-1850 (`os.environ.setdefault`); 0.6.2 recipes that set
it: recipes/qwen/gb200/qwen3_moe.py:88, recipes/moonlight/h100/moonlight_16b.py:375.
"""
    valid = [
        HEP + f'cfg.env_vars = {{"{ENV}": 8}}',
        HEP + f'cfg.env_vars = {{"{ENV}": "4"}}',
        HEP.replace('"hybridep"', '"deepep"'),
        # EP unknown (loop)
        HEP + f'cfg.env_vars = {{"{ENV}": 16}}\nfor ep in [32]:\n    cfg.model.expert_model_parallel_size = ep',
        'cfg = _pretrain_common()\n'
        'cfg.model = AutoBridge.from_hf_pretrained("x").to_megatron_provider(load_weights=False)\n'
        'cfg.model.moe_flex_dispatcher_backend = "hybridep"',  # dispatcher type HF-derived (unknown)
    ]
    invalid = [
        HEP + f'cfg.env_vars = {{"{ENV}": 16}}  # finding',
        HEP + 'cfg.env_vars = {"NCCL_NVLS_ENABLE": 0}  # finding',
        Example(HEP + f'cfg.env_vars = {{"{ENV}": 8}}', dotlist=("model.expert_model_parallel_size=4",)),
        Example(HEP + f'cfg.env_vars = {{"{ENV}": 8, "NVLINK_DOMAIN_SIZE": 4}}  # finding'),
    ]

    precondition = hybridep_known_on

    def check(self, cfg, ctx):
        if hybridep(cfg) is not True or cfg.type_of("env_vars") != "dict":
            return
        par = parallel(cfg)
        raw = cfg.value(f"env_vars.{ENV}")
        path = f"env_vars.{ENV}"
        if raw is ABSENT:
            if not int_values(par.ep):
                return
            yield ctx.report(
                cfg,
                f"the HybridEP backend is on but cfg.env_vars does not set {ENV}; set it to "
                f"min(EP, GPUs per NVLink domain) = min({par.ep}, 8) = {min(par.ep, 8)} on NVL8 nodes",
                ["model.moe_flex_dispatcher_backend", "env_vars"],
                primary="env_vars",
                fixes=[FixIntent("add", path, min(par.ep, 8), safe=False,
                                 description=f"add env_vars[{ENV!r}] = {min(par.ep, 8)} (NVL8 nodes)")],
            )
            return
        if not known(raw):
            return
        ranks = _as_int(raw)
        if ranks is None:
            return
        if int_values(par.ep) and ranks > par.ep:
            yield ctx.report(
                cfg,
                f"env_vars[{ENV!r}] is {ranks}, above expert_model_parallel_size = {par.ep}; HybridEP expects "
                f"min(EP, NVLink domain size), at most {par.ep}",
                [path, "model.expert_model_parallel_size"],
                fixes=[FixIntent("set", path, par.ep, safe=False, description=f"set it to {par.ep}")],
            )
            return
        domain = _as_int(cfg.value("env_vars.NVLINK_DOMAIN_SIZE")) if known(cfg.value("env_vars.NVLINK_DOMAIN_SIZE")) else None
        if domain is not None and ranks > domain:
            yield ctx.report(
                cfg,
                f"env_vars[{ENV!r}] is {ranks}, above env_vars['NVLINK_DOMAIN_SIZE'] = {domain}; HybridEP ranks per "
                "NVLink domain cannot exceed the domain size",
                [path, "env_vars.NVLINK_DOMAIN_SIZE"],
            )
