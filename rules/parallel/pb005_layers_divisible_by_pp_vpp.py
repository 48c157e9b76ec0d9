from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    assigned,
    hf_model,
    int_values,
    is_hybrid_stack,
    known,
    parallel,
    value,
)

MODEL = ('from megatron.bridge.models import GPTModelProvider\n'
         'cfg.model = GPTModelProvider(num_layers=32, hidden_size=64, num_attention_heads=4)\n')
HF_MODEL = hf_model("meta-llama/Llama-3.1-8B")
HYBRID = ('from megatron.bridge.models import MambaModelProvider\n'
          'cfg.model = MambaModelProvider(num_layers=30, hidden_size=64)\n')


class LayersDivisibleByPpVpp(Rule):
    id = "PB005"
    name = "layers-divisible-by-pp-vpp"
    severity = Severity.ERROR
    summary = "num_layers (plus embedding/loss stages) must split evenly over PP, and per stage over VPP."
    tags = ("parallelism", "pipeline")
    doc = """## What it does
For a transformer model split evenly over pipeline stages (no `pipeline_model_parallel_layout`,
no `num_layers_in_first/last_pipeline_stage`), flags `num_layers` (+1 for each of
`account_for_embedding_in_pipeline_split` / `account_for_loss_in_pipeline_split`) not divisible
by `pipeline_model_parallel_size`, or, with virtual pipelining, layers per stage not divisible
by `virtual_pipeline_model_parallel_size`. Silent when `num_layers` is unknown (usually
HF-derived) and for hybrid Mamba stacks.

## Why it matters
Megatron-Core asserts "num_layers=... should be divisible by pipeline_model_parallel_size" /
"num_layers_per_pipeline_rank ... should be divisible by vp_size" when building the model
(and `TransformerConfig.__post_init__`/the GPT provider check the accounted forms), after
the job has started.

## Example
```python
cfg.model.num_layers = 30
cfg.model.pipeline_model_parallel_size = 4
```

## Fix
Pick PP/VPP that divide the layer count, or use uneven stages / a pipeline layout; not automatic.

## Versions
0.3.x and 0.6.x.

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_block.py:142-165,
megatron/core/transformer/transformer_config.py:2064-2108; 0.6.2
megatron/bridge/models/gpt_provider.py:239-255.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 32\ncfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.virtual_pipeline_model_parallel_size = 2",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 30\ncfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.num_layers_in_first_pipeline_stage = 6",
        # num_layers from Hugging Face: unknown
        "cfg = _pretrain_common()\n" + HF_MODEL + "cfg.model.pipeline_model_parallel_size = 3",  # layers unknown
        # an AutoBridge model whose class is unknown may be a hybrid stack, which splits by its pattern
        "cfg = _pretrain_common()\n" + HF_MODEL + "cfg.model.num_layers = 30\ncfg.model.pipeline_model_parallel_size = 4",
        "cfg = _pretrain_common()\n" + HYBRID + "cfg.model.pipeline_model_parallel_size = 4",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 30\ncfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.account_for_embedding_in_pipeline_split = True\ncfg.model.account_for_loss_in_pipeline_split = True",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 32\ncfg.model.pipeline_model_parallel_size = 4",
                version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 30\ncfg.model.pipeline_model_parallel_size = 4  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 32\ncfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.virtual_pipeline_model_parallel_size = 3  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.num_layers = 30\ncfg.model.pipeline_model_parallel_size = 4  # error",
                version="0.3"),
    ]

    def check(self, cfg, ctx):
        par = parallel(cfg)
        layers = cfg.value("model.num_layers")
        # a hybrid (Mamba) stack splits its layers by its own pattern, not by transformer_block's rule
        if not int_values(layers, par.pp) or par.pp <= 1 or is_hybrid_stack(cfg) is not False:
            return
        if par.vpp is not None and not int_values(par.vpp):
            return
        for path in ("model.pipeline_model_parallel_layout", "model.num_layers_in_first_pipeline_stage",
                     "model.num_layers_in_last_pipeline_stage"):
            if value(cfg, path, None) is not None:
                return
        builder = value(cfg, "model._pipeline_model_parallel_layout_builder", None)
        if builder is not None and (known(builder) or assigned(cfg, "model._pipeline_model_parallel_layout_builder")):
            return
        extra = 0
        for path in ("model.account_for_embedding_in_pipeline_split", "model.account_for_loss_in_pipeline_split"):
            flag = value(cfg, path, False)
            if flag not in (True, False):
                return
            extra += int(flag)
        total = layers + extra
        shown = f"num_layers {layers}" + (f" + {extra} (embedding/loss stages) = {total}" if extra else "")
        fields = ["model.num_layers", "model.pipeline_model_parallel_size"]
        if total % par.pp != 0:
            message = f"{shown} is not divisible by pipeline_model_parallel_size {par.pp} ({total} % {par.pp} = {total % par.pp})"
            yield ctx.report(cfg, message, fields)
            return
        per_stage = total // par.pp
        if par.vpp is not None and per_stage % par.vpp != 0:
            message = (f"{shown} gives {per_stage} layers per pipeline stage (PP={par.pp}), not divisible by "
                       f"virtual_pipeline_model_parallel_size {par.vpp}")
            yield ctx.report(cfg, message, fields + ["model.virtual_pipeline_model_parallel_size"])
