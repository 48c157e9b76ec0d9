from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, effective_overlap_flag, knows_field, value

BASE = ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
        'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=8)\n'
        'cfg.model.moe_token_dispatcher_type = "alltoall"\ncfg.model.expert_model_parallel_size = 8\n')
OVERLAP = 'cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, overlap_moe_expert_parallel_comm=True)\n'
EARLY = "model.ep_overlap_early_attn_memory_release"
DISPATCH_WGRAD = "model.overlap_dispatch_backward_with_experts_wgrad"


class EpOverlapCompanions(Rule):
    id = "MO025"
    name = "ep-overlap-companions"
    severity = Severity.ERROR
    summary = ("ep_overlap_early_attn_memory_release needs expert-parallel overlap; "
               "overlap_dispatch_backward_with_experts_wgrad excludes it.")
    fixable = True
    tags = ("moe", "overlap")
    doc = """## What it does
With expert-parallel A2A overlap as the model has it after `runtime_config_update()`
(`comm_overlap.overlap_moe_expert_parallel_comm` with a `CommOverlapConfig`, else the model's
field), flags
- `model.ep_overlap_early_attn_memory_release = True` without the overlap;
- `model.overlap_dispatch_backward_with_experts_wgrad = True` with the overlap (0.5.x and later,
  where the field exists).

## Why it matters
Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()` in
`ConfigContainer.validate()`) asserts "overlap_moe_expert_parallel_comm must be enabled when
enabling ep_overlap_early_attn_memory_release" and "overlap_moe_expert_parallel_comm must be
disabled when enabling overlap_dispatch_backward_with_experts_wgrad." at job start: the early
release is a refinement of the A2A overlap, and overlapping the dispatch backward with the expert
weight gradients is an alternative to it. (Its third assert, against `delay_wgrad_compute`, is
never the one that stops a job: `delay_wgrad_compute` needs the A2A overlap, which this rule or
MO006 reports first.)

## Example
```python
cfg.model.ep_overlap_early_attn_memory_release = True   # no expert-parallel overlap
```

## Fix
Turn the early release off (safe: it only frees memory earlier inside the overlap), or pick one
of the two overlaps. Only the first has an automatic fix.

## Versions
0.3.x to 0.6.x for the early release; 0.5.x and 0.6.x for the dispatch/wgrad overlap
(Megatron-Core 0.18 added the field with its checks).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2758-2776 (0.16.1 :1921-1926
for the early release; 0.18.0 :2463-2475). Oracle (0.6.2, `qwen3_30b_a3b_pretrain_config`):
`model.ep_overlap_early_attn_memory_release=True` fails with "overlap_moe_expert_parallel_comm must be
enabled when enabling ep_overlap_early_attn_memory_release"; EP 8 with
`comm_overlap.overlap_moe_expert_parallel_comm=True model.overlap_dispatch_backward_with_experts_wgrad=True`
with "overlap_moe_expert_parallel_comm must be disabled when enabling
overlap_dispatch_backward_with_experts_wgrad."; the latter alone is accepted.
"""
    valid = [
        BASE + OVERLAP + "cfg.model.ep_overlap_early_attn_memory_release = True",
        BASE + "cfg.model.overlap_dispatch_backward_with_experts_wgrad = True",
        BASE + "for flag in (True, False):\n    cfg.model.overlap_moe_expert_parallel_comm = flag\n"
        "cfg.model.ep_overlap_early_attn_memory_release = True",
        Example(BASE + OVERLAP + "cfg.model.ep_overlap_early_attn_memory_release = True", version="0.3"),
    ]
    invalid = [
        Example(BASE + "cfg.model.ep_overlap_early_attn_memory_release = True  # error",
                message="must be enabled when enabling ep_overlap_early_attn_memory_release", unsafe=True,
                fixed=BASE + "cfg.model.ep_overlap_early_attn_memory_release = False  # error"),
        Example(BASE + OVERLAP + "cfg.model.overlap_dispatch_backward_with_experts_wgrad = True  # error",
                message="must be disabled when enabling overlap_dispatch_backward_with_experts_wgrad"),
        # modelled on the early release turned on from the command line without the overlap
        Example(BASE, dotlist=("model.ep_overlap_early_attn_memory_release=true",)),
        Example(BASE + "cfg.model.ep_overlap_early_attn_memory_release = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        overlap, overlap_path = effective_overlap_flag(cfg, "overlap_moe_expert_parallel_comm")
        if value(cfg, EARLY, False) is True and overlap is False:
            yield ctx.report(cfg, f"{EARLY} is True but expert-parallel overlap is off ({overlap_path}); Megatron-Core "
                                  "asserts 'overlap_moe_expert_parallel_comm must be enabled when enabling "
                                  "ep_overlap_early_attn_memory_release' at job start", [EARLY, overlap_path],
                             primary=EARLY,
                             fixes=[FixIntent("set", EARLY, False, safe=True, description=f"set {EARLY} = False")])
        if knows_field(cfg, "overlap_dispatch_backward_with_experts_wgrad") \
                and value(cfg, DISPATCH_WGRAD, False) is True and overlap is True:
            yield ctx.report(cfg, f"{DISPATCH_WGRAD} is True with expert-parallel overlap on ({overlap_path}); "
                                  "Megatron-Core asserts 'overlap_moe_expert_parallel_comm must be disabled when "
                                  "enabling overlap_dispatch_backward_with_experts_wgrad.' at job start",
                             [DISPATCH_WGRAD, overlap_path], primary=DISPATCH_WGRAD)
