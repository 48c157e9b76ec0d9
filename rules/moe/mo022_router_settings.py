from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, format_value, hf_model, int_values, known, value

GPT = ('from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n'
       'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4, num_moe_experts=64)\n')
HF = "cfg = _pretrain_common()\n" + hf_model()
TOPK = "model.moe_router_topk"
SCORE = "model.moe_router_score_function"
PRE_SOFTMAX = "model.moe_router_pre_softmax"
BALANCING = "model.moe_router_load_balancing_type"
COEFF = "model.moe_aux_loss_coeff"
EXPERT_BIAS = "model.moe_router_enable_expert_bias"
GROUP_TOPK = "model.moe_router_group_topk"
GROUPS = "model.moe_router_num_groups"
EXPERTS = "model.num_moe_experts"


class RouterSettings(Rule):
    id = "MO022"
    name = "router-settings"
    severity = Severity.ERROR
    summary = ("The MoE router's settings must fit together: top-1 softmax routing needs pre-softmax, expert bias "
               "a sigmoid score, group-limited routing its groups, a list of balancing types as many coefficients.")
    fixable = True
    tags = ("moe",)
    doc = """## What it does
Flags the router settings Megatron-Core rejects, on `cfg.model`:
- `moe_router_topk = 1` with `moe_router_score_function = "softmax"`, `moe_router_pre_softmax`
  False and a load-balancing type other than "sinkhorn";
- `moe_router_enable_expert_bias = True` with the "softmax" score function (the bias of
  aux-loss-free balancing needs "sigmoid", or "sqrtsoftplus" where the release has it);
- group-limited routing (`moe_router_group_topk` set) without `moe_router_num_groups`, with a
  `num_moe_experts` that the group count does not divide, or with more groups chosen than
  there are;
- `moe_router_load_balancing_type` a list and `moe_aux_loss_coeff` not a list of the same
  length.

## Why it matters
`TransformerConfig.__post_init__` (run by `model.finalize()` in `ConfigContainer.validate()`)
raises "Please use --moe-router-pre-softmax when topk is 1." (softmax over one selected expert
has a zero gradient), "Expert bias for aux-loss-free routing only supports ... score
functions", "When using group limited routing, moe_router_num_groups must be specified.", and
asserts "num_moe_experts (N) should be divisible by moe_router_num_groups (G).",
"moe_router_group_topk (K) should be smaller than moe_router_num_groups (G)." and
"moe_aux_loss_coeff must be a list of the same length as moe_router_load_balancing_type", at
job start. Trying top-1 routing, or DeepSeek-style expert bias and group routing, on a Qwen3 or
Mixtral recipe (softmax routers) gets there.

## Example
```python
cfg.model.moe_router_topk = 1                 # softmax router: set moe_router_pre_softmax = True
cfg.model.moe_router_enable_expert_bias = True
```

## Fix
For top-1 routing, set `model.moe_router_pre_softmax = True` (safe: Megatron-Core's own advice;
softmax over all experts before the top-1 choice). For expert bias, set
`model.moe_router_score_function = "sigmoid"` (unsafe: the routing weights change). The group
and coefficient settings have no automatic fix.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check them the same way; "sqrtsoftplus" is accepted
with expert bias from Megatron-Core 0.18, "softmax" never).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2284-2292 (expert bias),
2328-2336 (top-1), 2338-2355 (groups), 1652-1658 (coefficients); 0.16.1 :1593-1596, :1634-1641,
:1643-1660, :1097-1102. Oracle (Megatron-Bridge 0.6.2, `qwen3_30b_a3b_pretrain_config`, 128
experts, softmax router): `model.moe_router_topk=1` fails with "Please use --moe-router-pre-softmax
when topk is 1."; `model.moe_router_enable_expert_bias=True` with "Expert bias for aux-loss-free
routing only supports 'sigmoid' and 'sqrtsoftplus' score functions..."; `moe_router_group_topk=2`
with "When using group limited routing, moe_router_num_groups must be specified."; with
`moe_router_num_groups=5` "num_moe_experts (128) should be divisible by moe_router_num_groups
(5)."; `group_topk=8 num_groups=4` "moe_router_group_topk (8) should be smaller than
moe_router_num_groups (4)."; `moe_router_load_balancing_type=['aux_loss','seq_aux_loss']` with
`moe_aux_loss_coeff=0.001` or `[0.001]` "moe_aux_loss_coeff must be a list of the same length as
moe_router_load_balancing_type".
"""
    valid = [
        GPT + "cfg.model.moe_router_topk = 1\ncfg.model.moe_router_pre_softmax = True",
        GPT + "cfg.model.moe_router_topk = 1\ncfg.model.moe_router_load_balancing_type = 'sinkhorn'",
        GPT + "cfg.model.moe_router_score_function = 'sigmoid'\ncfg.model.moe_router_enable_expert_bias = True",
        GPT + "cfg.model.moe_router_group_topk = 4\ncfg.model.moe_router_num_groups = 8",
        GPT + "cfg.model.moe_router_load_balancing_type = ['aux_loss', 'seq_aux_loss']\n"
        "cfg.model.moe_aux_loss_coeff = [0.001, 0.0001]",
        # the router's settings from a Hugging Face config mblint cannot read
        HF + "cfg.model.moe_router_enable_expert_bias = True\ncfg.model.moe_router_topk = 1",
        GPT + "for k in (1, 2):\n    cfg.model.moe_router_topk = k",
        Example(GPT + "cfg.model.moe_router_topk = 1\ncfg.model.moe_router_pre_softmax = True", version="0.3"),
    ]
    invalid = [
        Example(GPT + "cfg.model.moe_router_topk = 1  # error", message="Please use --moe-router-pre-softmax",
                unsafe=False, fixed=GPT + "cfg.model.moe_router_topk = 1  # error\n"
                                          "cfg.model.moe_router_pre_softmax = True"),
        Example(GPT + "cfg.model.moe_router_enable_expert_bias = True  # error",
                message="but model.moe_router_score_function is 'softmax'", unsafe=True,
                fixed=GPT + "cfg.model.moe_router_enable_expert_bias = True  # error\n"
                            'cfg.model.moe_router_score_function = "sigmoid"'),
        Example(GPT + "cfg.model.moe_router_group_topk = 2  # error", message="moe_router_num_groups must be specified"),
        Example(GPT + "cfg.model.moe_router_group_topk = 2\ncfg.model.moe_router_num_groups = 5  # error",
                message="should be divisible by moe_router_num_groups (5)"),
        Example(GPT + "cfg.model.moe_router_group_topk = 8\ncfg.model.moe_router_num_groups = 4  # error",
                message="should be smaller than moe_router_num_groups (4)"),
        Example(GPT + "cfg.model.moe_router_load_balancing_type = ['aux_loss', 'seq_aux_loss']\n"
                "cfg.model.moe_aux_loss_coeff = [0.001]  # error", message="2 load-balancing types"),
        # modelled on top-1 routing tried on a softmax-router recipe from the command line
        Example(GPT, dotlist=("model.moe_router_topk=1",)),
        Example(GPT + "cfg.model.moe_router_topk = 1  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        score = value(cfg, SCORE, None)
        yield from self._top1(cfg, ctx, score)
        if value(cfg, EXPERT_BIAS, False) is True and score == "softmax":
            yield ctx.report(
                cfg, f"{EXPERT_BIAS} is True but {SCORE} is 'softmax'; Megatron-Core raises 'Expert bias for "
                     "aux-loss-free routing only supports ... score functions' at job start",
                [EXPERT_BIAS, SCORE], primary=EXPERT_BIAS,
                fixes=[FixIntent("set", SCORE, "sigmoid", safe=False, description=f"set {SCORE} = 'sigmoid'")])
        yield from self._groups(cfg, ctx)
        yield from self._coefficients(cfg, ctx)

    @staticmethod
    def _top1(cfg, ctx, score):
        topk, pre = value(cfg, TOPK, None), value(cfg, PRE_SOFTMAX, False)
        balancing = value(cfg, BALANCING, None)
        if not int_values(topk) or topk != 1 or score != "softmax" or pre is not False:
            return
        if not known(balancing) or balancing == "sinkhorn":
            return
        yield ctx.report(
            cfg, f"{TOPK} is 1 with the softmax score function and {PRE_SOFTMAX} False; Megatron-Core raises "
                 "'Please use --moe-router-pre-softmax when topk is 1.' at job start (softmax over one chosen "
                 "expert has a zero gradient)",
            [TOPK, PRE_SOFTMAX, SCORE], primary=TOPK,
            fixes=[FixIntent("set", PRE_SOFTMAX, True, safe=True, description=f"set {PRE_SOFTMAX} = True")])

    @staticmethod
    def _groups(cfg, ctx):
        group_topk, groups = value(cfg, GROUP_TOPK, None), value(cfg, GROUPS, None)
        if not int_values(group_topk) or group_topk == 0:
            return
        if groups is None or groups == 0:
            yield ctx.report(cfg, f"{GROUP_TOPK} is {group_topk} (group-limited routing) but {GROUPS} is "
                                  f"{groups}; Megatron-Core raises 'When using group limited routing, "
                                  "moe_router_num_groups must be specified.' at job start", [GROUP_TOPK, GROUPS],
                             primary=GROUP_TOPK)
            return
        if not int_values(groups):
            return
        experts = value(cfg, EXPERTS, None)
        if int_values(experts) and experts % groups != 0:
            yield ctx.report(cfg, f"{EXPERTS} is {experts}, not divisible by {GROUPS} {groups}; Megatron-Core "
                                  f"asserts 'num_moe_experts ({experts}) should be divisible by "
                                  f"moe_router_num_groups ({groups}).' at job start", [GROUPS, EXPERTS],
                             primary=GROUPS)
        elif group_topk > groups:
            yield ctx.report(cfg, f"{GROUP_TOPK} ({group_topk}) is more than {GROUPS} ({groups}); Megatron-Core "
                                  f"asserts 'moe_router_group_topk ({group_topk}) should be smaller than "
                                  f"moe_router_num_groups ({groups}).' at job start", [GROUP_TOPK, GROUPS])

    @staticmethod
    def _coefficients(cfg, ctx):
        balancing, coeff = value(cfg, BALANCING, None), value(cfg, COEFF, None)
        if type(balancing) is not list or not known(coeff):
            return
        if type(coeff) is list and len(coeff) == len(balancing):
            return
        if type(coeff) is not list and not isinstance(coeff, (int, float)):
            return
        shown = f"a list of {len(coeff)}" if type(coeff) is list else f"{format_value(coeff)}, not a list"
        yield ctx.report(cfg, f"{BALANCING} lists {len(balancing)} load-balancing types but {COEFF} is {shown}; "
                              "Megatron-Core asserts 'moe_aux_loss_coeff must be a list of the same length as "
                              "moe_router_load_balancing_type' at job start", [COEFF, BALANCING], primary=COEFF)
