from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    format_value,
    hf_model,
    known,
    layout_stages,
    parallel,
    value,
)

MODEL = hf_model("deepseek-ai/DeepSeek-V3")
LAYOUT_16 = '"Et|(tt|)*14L"'  # 16 stages: "Et", 14 x "tt", "L"
FIELDS = ["model.pipeline_model_parallel_layout", "model.pipeline_model_parallel_size",
          "model.virtual_pipeline_model_parallel_size"]


class LayoutStagesVsPpVpp(Rule):
    id = "PB013"
    name = "layout-stages-vs-pp-vpp"
    severity = Severity.ERROR
    summary = "A pipeline_model_parallel_layout's stage count must be PP x VP (the layout sets VP itself)."
    tags = ("parallelism", "pipeline")
    doc = """## What it does
Counts the stages of `model.pipeline_model_parallel_layout` (stages are separated by `|`;
`(...)*n` and `x*n` repeat, commas are cosmetic; a list of lists has one stage per row) and
flags a count that `model.pipeline_model_parallel_size` does not divide, or whose quotient
differs from an explicitly set `model.virtual_pipeline_model_parallel_size`.

## Why it matters
`TransformerConfig.__post_init__` (run by `validate()`) parses the layout and asserts
"pipeline_model_parallel_layout must be divisible by pipeline_model_parallel_size", then
"virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout" when the
VP size set differs from stages / PP. A layout written for one pipeline shape (a 16-stage
DeepSeek-V3 layout for PP 8 x VP 2) and kept after changing the shape (`-pp 4 -vp 1`) stops
the job at start-up.

## Example
```python
cfg.model.pipeline_model_parallel_layout = "Et|(tt|)*14L"   # 16 stages
cfg.model.pipeline_model_parallel_size = 4
cfg.model.virtual_pipeline_model_parallel_size = 1          # 16 / 4 = 4, not 1
```

## Fix
Write a layout for the new shape, or set `pipeline_model_parallel_layout = None`; or set VP to
stages / PP (None lets Megatron-Core take it from the layout). Not automatic.

## Versions
0.3.x and 0.6.x (Megatron-Core 0.16.1 and 0.19.2 check it the same way).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1955-1980,
megatron/core/transformer/pipeline_parallel_layer_layout.py:24-45 (divisibility, VP = stages /
PP), :283-321 (`parse_str_to_list`); Megatron-Core 0.16.1 transformer_config.py:1330-1350.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + f"cfg.model.pipeline_model_parallel_layout = {LAYOUT_16}\n"
        "cfg.model.pipeline_model_parallel_size = 8\ncfg.model.virtual_pipeline_model_parallel_size = 2",
        # VP left None: Megatron-Core takes it from the layout
        "cfg = _pretrain_common()\n" + MODEL + f"cfg.model.pipeline_model_parallel_layout = {LAYOUT_16}\n"
        "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.virtual_pipeline_model_parallel_size = None",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_layout = [['embedding', 'decoder'], "
        "['decoder', 'loss']]\ncfg.model.pipeline_model_parallel_size = 2",
        # PP unknown
        "cfg = _pretrain_common()\n" + MODEL + f"cfg.model.pipeline_model_parallel_layout = {LAYOUT_16}\n"
        "for pp in (4, 8):\n    cfg.model.pipeline_model_parallel_size = pp",
        Example("cfg = _pretrain_common()\n" + MODEL + f"cfg.model.pipeline_model_parallel_layout = {LAYOUT_16}\n"
                "cfg.model.pipeline_model_parallel_size = 8\ncfg.model.virtual_pipeline_model_parallel_size = 2",
                version="0.3"),
    ]
    invalid = [
        # the reported case: a 16-stage DeepSeek-V3 layout kept after -pp 4 -vp 1
        "cfg = _pretrain_common()\n" + MODEL + f"cfg.model.pipeline_model_parallel_layout = {LAYOUT_16}\n"
        "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.virtual_pipeline_model_parallel_size = 1  # error",
        "cfg = _pretrain_common()\n" + MODEL + f"cfg.model.pipeline_model_parallel_layout = {LAYOUT_16}\n"
        "cfg.model.pipeline_model_parallel_size = 6  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + f"cfg.model.pipeline_model_parallel_layout = {LAYOUT_16}\n"
                "cfg.model.pipeline_model_parallel_size = 8\ncfg.model.virtual_pipeline_model_parallel_size = 4  # error",
                version="0.3"),
        Example("cfg = _pretrain_common()\n" + MODEL + f"cfg.model.pipeline_model_parallel_layout = {LAYOUT_16}\n"
                "cfg.model.pipeline_model_parallel_size = 8",
                dotlist=("model.pipeline_model_parallel_size=4", "model.virtual_pipeline_model_parallel_size=1")),
    ]

    def check(self, cfg, ctx):
        layout = value(cfg, "model.pipeline_model_parallel_layout", None)
        if layout is None or not (known(layout) or isinstance(layout, (list, tuple))):
            return
        parsed = layout_stages(layout)
        par = parallel(cfg)
        if parsed is None or not isinstance(par.pp, int):
            return
        stages = len(parsed)
        if stages % par.pp:
            yield ctx.report(
                cfg, f"model.pipeline_model_parallel_layout has {stages} stages, which "
                     f"pipeline_model_parallel_size = {par.pp} does not divide; Megatron-Core rejects the layout",
                FIELDS[:2])
            return
        vpp = par.vpp
        if vpp is None or not isinstance(vpp, int) or vpp == stages // par.pp:
            return
        yield ctx.report(
            cfg, f"model.pipeline_model_parallel_layout has {stages} stages = PP {par.pp} x VP {stages // par.pp}, "
                 f"but virtual_pipeline_model_parallel_size is {format_value(vpp)}; Megatron-Core asserts "
                 f"\"virtual_pipeline_model_parallel_size conflicts with pipeline_model_parallel_layout\"",
            FIELDS)

