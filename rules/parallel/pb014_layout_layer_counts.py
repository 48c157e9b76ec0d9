from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, format_value, hf_model, is_hybrid_stack, known, layout_stages, value

MODEL = ("from megatron.bridge.models import GPTModelProvider\n"
         "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)\n"
         "cfg.model.pipeline_model_parallel_size = 2\n")
LAYOUT = "cfg.model.pipeline_model_parallel_layout = "
FIELDS = ["model.pipeline_model_parallel_layout", "model.num_layers"]
MTP_FIELDS = ["model.pipeline_model_parallel_layout", "model.mtp_num_layers"]


class LayoutLayerCounts(Rule):
    id = "PB014"
    name = "layout-layer-counts"
    severity = Severity.ERROR
    summary = ("A pipeline_model_parallel_layout must place num_layers decoder layers and mtp_num_layers MTP layers, "
               "embedding first and loss last.")
    tags = ("parallelism", "pipeline", "architecture")
    doc = """## What it does
Counts the decoder layers (`t`, or `"decoder"` in a list layout) and the multi-token-prediction
layers (`m`, `"mtp"`) that `model.pipeline_model_parallel_layout` places (stages split by `|`,
`(...)*n` and `x*n` repeat, commas are cosmetic) and flags a count that differs from
`model.num_layers`, or from `model.mtp_num_layers` (no MTP layer when it is None). Runs where
the layer counts are known: set in the recipe, or read from the model's Hugging Face
`config.json`. Also flags a layout that does not start with the embedding (`E`) and end with the
loss (`L`), each once, or that places a decoder layer after an MTP layer. Silent for hybrid
(Mamba) stacks.

## Why it matters
`TransformerConfig.__post_init__` (run by `ConfigContainer.validate()`) turns the layout into a
`PipelineParallelLayerLayout` and asserts "Number of decoder layers ... must match num_layers"
and "Number of mtp layers in layout must match mtp_num_layers", and that the embedding comes first
and the loss last, each once, and "decoder layers must be placed before MTP layers". A layout written for one model
(DeepSeek-V3's 61 layers and one MTP layer) and kept for another, or after changing
`num_layers` or `mtp_num_layers`, stops the job at start-up, after the GPUs are allocated.

## Example
```python
cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)
cfg.model.pipeline_model_parallel_size = 2
cfg.model.pipeline_model_parallel_layout = "Ettt|tL"   # 4 decoder layers: right
cfg.model.pipeline_model_parallel_layout = "Ett|tL"    # 3: error
```

## Fix
Write the layout for the model's layer counts, or set `pipeline_model_parallel_layout = None`
(even split). Not automatic: where the missing layers belong is a choice.

## Versions
0.3.x and 0.6.x (Megatron-Core 0.16.1 and 0.19.2 check it the same way).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1955-1986,
megatron/core/transformer/pipeline_parallel_layer_layout.py:85-113 (`validate_layer_layout`),
:283-321 (`parse_str_to_list`); Megatron-Core 0.16.1 transformer_config.py:1330-1357.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + LAYOUT + '"Ettt|tL"',
        "cfg = _pretrain_common()\n" + MODEL + LAYOUT + '"E(t|)*3tL"',
        "cfg = _pretrain_common()\n" + MODEL + LAYOUT + "[['embedding', 'decoder', 'decoder'], ['decoder', 'decoder', 'loss']]",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.mtp_num_layers = 1\n" + LAYOUT + '"Ett|ttmL"',
        # the layer count unknown (an HF model without its config.json)
        "cfg = _pretrain_common()\n" + hf_model("deepseek-ai/DeepSeek-V3")
        + "cfg.model.pipeline_model_parallel_size = 2\n" + LAYOUT + '"Ett|tL"',
        Example("cfg = _pretrain_common()\n" + MODEL + LAYOUT + '"Ettt|tL"', version="0.3"),
    ]
    invalid = [
        Example("cfg = _pretrain_common()\n" + MODEL + LAYOUT + '"Ett|tL"  # error',
                message="places 3 decoder layers, but model.num_layers is 4"),
        Example("cfg = _pretrain_common()\n" + MODEL + LAYOUT + "[['embedding', 'decoder'], ['decoder', 'loss']]  # error",
                message="places 2 decoder layers, but model.num_layers is 4"),
        Example("cfg = _pretrain_common()\n" + MODEL + LAYOUT + '"Ett|ttmL"  # error',
                message="places 1 MTP layer, but model.mtp_num_layers is None"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.mtp_num_layers = 1\n" + LAYOUT + '"Ett|ttL"  # error',
                message="places 0 MTP layers, but model.mtp_num_layers is 1"),
        Example("cfg = _pretrain_common()\n" + MODEL + LAYOUT + '"tttt|EL"  # error',
                message="must start with the embedding (E) and end with the loss (L), each once"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.mtp_num_layers = 1\n" + LAYOUT + '"Ett|tmtL"  # error',
                message="places a decoder layer after an MTP layer"),
        Example("cfg = _pretrain_common()\n" + MODEL + LAYOUT + '"Ett|tL"  # error', version="0.3"),
    ]

    def check(self, cfg, ctx):
        stages = layout_stages(value(cfg, "model.pipeline_model_parallel_layout", None))
        if stages is None or is_hybrid_stack(cfg) is not False:  # hybrid stacks count layers by their pattern
            return
        layers = [layer for stage in stages for layer in stage]
        problem = _order_problem(layers)
        if problem:
            yield ctx.report(cfg, f"model.pipeline_model_parallel_layout {problem}; Megatron-Core rejects the layout",
                             FIELDS[:1])
        num_layers = value(cfg, "model.num_layers", None)
        if isinstance(num_layers, int) and known(num_layers) and layers.count("decoder") != num_layers:
            yield ctx.report(
                cfg, f"model.pipeline_model_parallel_layout places {layers.count('decoder')} decoder layers, "
                     f"but model.num_layers is {num_layers}; Megatron-Core asserts \"Number of decoder layers "
                     f"must match num_layers\"", FIELDS, primary=FIELDS[0])
        mtp = value(cfg, "model.mtp_num_layers", None)
        if not known(mtp) or not (mtp is None or isinstance(mtp, int)):
            return
        placed = layers.count("mtp")
        if placed != (mtp or 0):
            noun = "MTP layer" if placed == 1 else "MTP layers"
            yield ctx.report(
                cfg, f"model.pipeline_model_parallel_layout places {placed} {noun}, but model.mtp_num_layers "
                     f"is {format_value(mtp)}; Megatron-Core asserts \"Number of mtp layers in layout must match "
                     f"mtp_num_layers\"", MTP_FIELDS, primary=MTP_FIELDS[0])


def _order_problem(layers: list[str]) -> str | None:
    """What ``validate_layer_layout`` asserts of the order, whatever the model. Its flattened
    layout (layer-id order: stage ``vp * PP + pp``) is the stages in written order."""
    if not layers or layers[0] != "embedding" or layers[-1] != "loss" or layers.count("embedding") != 1 \
            or layers.count("loss") != 1:
        return "must start with the embedding (E) and end with the loss (L), each once"
    if "mtp" in layers and "decoder" in layers[layers.index("mtp"):]:
        return "places a decoder layer after an MTP layer (decoder layers must come first)"
    return None
