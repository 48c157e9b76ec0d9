from __future__ import annotations

import re

from mblint.rulekit import WORLD_SIZE_UNKNOWN, COVERAGE_TAG, Example, Rule, Severity, hf_model, world_size_gap

# A scale in nodes, as Megatron-Bridge 0.3-0.5 name one recipe (``deepseek_v3_pretrain_config_32nodes``).
NODES = re.compile(r"_(\d+)nodes?_")
MODEL = "cfg = _pretrain_common()\n" + hf_model("meta-llama/Llama-3.1-8B") + "cfg.model.tensor_model_parallel_size = 2"


class WorldSizeUnknown(Rule):
    id = "CV003"
    name = "world-size-unknown"
    severity = Severity.INFO
    summary = ("A recipe's name gives its scale in nodes, not in GPUs, or a launch leaves its world size unknown: the "
               "checks that divide the world size did not run.")
    tags = (COVERAGE_TAG,)
    doc = """## What it does
Reports a recipe whose name gives the job's scale in nodes (`..._32nodes`) while mblint has no
world size (the number of GPUs) for it: no `--world-size`, no `world-size` in the settings, no
`# mblint: world-size=N` comment in the recipe's file, no `_<N>gpu_` in the name. It lands on
the recipe's `def` line, when the parallel layout (TP, PP, CP) is known, and names the rules
that needed the world size (those tagged `world-size`, `mblint rules` lists them).

A recipe whose name says nothing of its scale is not reported: its world size is not part of
the recipe but of the launch that runs it (`torchrun --nproc_per_node`, `#SBATCH --nodes`), so
the checks against it belong to the launch line, where mblint reads it (LA002 says when a
launch leaves it unknown). Reporting every such recipe would be true and useless: the 0.3.1
recipes, none of whose names carries a GPU count, gave 160 of these (one per recipe).

A launch line that leaves the world size unknown (`--nnodes=$NNODES`) is the same gap, at that
launcher option: LA002 says it there more precisely and CV003 gives way to it; with LA002 not
selected, CV003 reports it there.

## Why it matters
The data-parallel size is the world size divided by TP * PP * CP; without it, the checks that
the world divides into the model-parallel and expert grids, that the global batch divides by
micro-batch times data-parallel size, and that the layout fits the GPUs did not run. A name in
nodes says which size the recipe is written for, but not how many GPUs a node has, so mblint
does not guess it. Info, not a warning: the rest of the recipe was checked; the finding says
how to give the size for a full check.

## Example
```python
def deepseek_v3_pretrain_config_32nodes():      # 32 nodes of how many GPUs?
    cfg.model.tensor_model_parallel_size = 2
```

## Fix
Give the world size: `mblint check --world-size 256`, `world-size = 256` in the settings, or a
`# mblint: world-size=256` comment in the recipe's file (Megatron-Bridge 0.6 names the same
recipe `deepseek_v3_pretrain_256gpu_h100_bf16_32nodes_config`). No automatic fix.

## Versions
All.

## Sources
0.6.2 megatron/bridge/training/config.py:1013-1027 (`get_data_parallel_size`: the world size
over TP * PP * CP); 0.3.1 megatron/bridge/recipes/deepseek/deepseek_v3.py:201
(`deepseek_v3_pretrain_config_32nodes`), 0.6.2 recipes/deepseek/h100/deepseek_v3.py:257 (its
0.6 name, `_256gpu_..._32nodes_`).
"""
    valid = [
        # a recipe alone: its world size is its launch's
        MODEL,
        Example(MODEL, world_size=8, function="llama3_8b_pretrain_4nodes_config"),
        Example(MODEL, function="llama3_8b_pretrain_32gpu_4nodes_config"),
        # the layout is unknown: the checks that need the world size need it too
        Example(MODEL.replace("= 2", "= TP").replace("cfg = _pretrain_common()", "from mycompany.sizes import TP\ncfg = _pretrain_common()"),
                function="llama3_8b_pretrain_4nodes_config"),
    ]
    invalid = [
        Example(MODEL, function="llama3_8b_pretrain_4nodes_config",
                message="llama3_8b_pretrain_4nodes_config: the name gives 4 nodes but not how many GPUs each has"),
    ]

    def check(self, cfg, ctx):
        launch = ctx.world_size_unknown_at  # a launch line that leaves the world size unknown
        nodes = NODES.search(f"_{cfg.recipe.function}_")
        if launch is None and nodes is None:
            return  # the world size is the launch's to give
        needing = world_size_gap(cfg, ctx)
        if needing is None:
            return
        which = f" ({', '.join(needing)})" if needing else ""
        why = (f"the world size is unknown (a launcher option here is not known), so the checks that need it did "
               f"not run{which}" if launch is not None else
               f"the name gives {nodes.group(1)} nodes but not how many GPUs each has, so the world size is unknown "
               f"and the checks that need it did not run{which}")
        yield ctx.report(cfg, (
            f"{cfg.recipe.function}: {why}: the world divided by TP * PP * CP and by the expert grid, the global batch "
            "by micro-batch times data-parallel size; give it with --world-size N, `world-size` in the settings or a "
            "`# mblint: world-size=N` comment in the recipe's file"),
            location=launch or cfg.recipe.origin(), problem=WORLD_SIZE_UNKNOWN)
