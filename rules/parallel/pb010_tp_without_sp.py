from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, hf_model, int_values, parallel

# A provider class mblint knows: an AutoBridge model without its config.json may be any
# provider, some of which turn sequence parallelism on in finalize() (see the doc).
MODEL = ('from megatron.bridge.models import GPTModelProvider\n'
         'cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n')
# modelled on 0.6.2's qwen3_vl_235b_a22b_sft_32gpu_h100_bf16_config (no config.json at hand)
HF_QWEN3_VL_MOE = "cfg = _sft_common_vlm()\n" + hf_model("Qwen/Qwen3-VL-235B-A22B-Instruct")


QWEN3_VL_MOE = ("from megatron.bridge.models.qwen_vl.qwen3_vl_provider import Qwen3VLMoEModelProvider\n"
                "cfg = _sft_common()\n"
                "cfg.model = Qwen3VLMoEModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n")


class TpWithoutSp(Rule):
    id = "PB010"
    name = "tp-without-sp"
    severity = Severity.WARNING
    summary = "Tensor parallelism without sequence parallelism wastes activation memory."
    fixable = True
    tags = ("parallelism", "sequence-parallel", "performance")
    doc = """## What it does
Flags `model.tensor_model_parallel_size > 1` with `model.sequence_parallel` False, as the
configuration stands after the model provider's `finalize()` (some providers, such as
`Qwen3VLMoEModelProvider`, turn sequence parallelism on themselves whenever TP > 1; mblint
applies those assignments, listed in `mblint.resolve.PROVIDER_FINALIZE`, each applied where
the release's code has it). A model from `AutoBridge` whose provider class is not known (its
`config.json` is not at hand) may be such a provider: its sequence parallelism with TP > 1 is
unknown and the rule is silent.

## Why it matters
Without sequence parallelism every tensor-parallel rank keeps a full copy of the
LayerNorm/dropout activations, which sequence parallelism shards TP ways at no extra
communication (the all-reduce becomes a reduce-scatter plus all-gather). TP communication
overlap also requires it: `CommOverlapConfig` disables `tp_comm_overlap` when
`sequence_parallel` is off.

## Example
```python
cfg.model.tensor_model_parallel_size = 4
cfg.model.sequence_parallel = False
```

## Fix
Unsafe (changes the activation layout and adds a constraint): set `model.sequence_parallel =
True`; the sequence length must then be divisible by TP, times CP with context parallelism.

## Versions
0.3.x and 0.6.x.

## Sources
skills/mbridge-perf-parallelism-strategies/SKILL.md ("Decision by Sequence Length": 2K-8K add
SP; "Combined Parallelism Enablement"); 0.6.2 megatron/bridge/training/comm_overlap.py:443-447
(TP overlap disabled without SP).
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = True",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 1",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 4\n"
        "for sp in (True, False):\n    cfg.model.sequence_parallel = sp",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 2\n"
                "cfg.model.sequence_parallel = True", version="0.3"),
        # the provider's finalize() turns sequence parallelism on whenever TP > 1
        QWEN3_VL_MOE + "cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = False",
        Example(QWEN3_VL_MOE + "cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = False",
                version="0.3"),
        # an AutoBridge model whose class is not known may be such a provider: SP is unknown
        HF_QWEN3_VL_MOE + "cfg.model.tensor_model_parallel_size = 4\ncfg.model.sequence_parallel = False",
    ]
    invalid = [
        # the dense sibling's finalize() leaves sequence parallelism alone
        Example(QWEN3_VL_MOE.replace("MoEModelProvider", "ModelProvider") + "cfg.model.tensor_model_parallel_size = 4\n"
                "cfg.model.sequence_parallel = False  # error", unsafe=True,
                fixed=QWEN3_VL_MOE.replace("MoEModelProvider", "ModelProvider") + "cfg.model.tensor_model_parallel_size = 4\n"
                      "cfg.model.sequence_parallel = True  # error"),
        # seq_length 4096 is divisible by TP = 4, as sequence parallelism needs
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 4  # error",
                message="each of the 4 TP ranks keeps full-sequence norm/dropout activations", unsafe=True,
                fixed="cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 4  # error\n"
                      "cfg.model.sequence_parallel = True"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.tensor_model_parallel_size = 2\n"
                "cfg.model.sequence_parallel = False  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        par = parallel(cfg)
        if par.sp is not False or not int_values(par.tp) or par.tp <= 1:
            return
        message = (f"model.tensor_model_parallel_size is {par.tp} but sequence_parallel is False: each of the "
                   f"{par.tp} TP ranks keeps full-sequence norm/dropout activations, and TP communication overlap "
                   f"cannot be used")
        yield ctx.report(cfg, message, ["model.tensor_model_parallel_size", "model.sequence_parallel"],
                         fixes=[FixIntent("set", "model.sequence_parallel", True, safe=False,
                                          description="set sequence_parallel to True")])
