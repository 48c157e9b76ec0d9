from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, assigned, int_values, is_hybrid_stack, known, parallel, value

MODEL = ("cfg = _pretrain_common()\nfrom megatron.bridge.models import GPTModelProvider\n"
         "cfg.model = GPTModelProvider(num_layers=32, hidden_size=64, num_attention_heads=4)\n")
FIRST = "model.num_layers_in_first_pipeline_stage"
LAST = "model.num_layers_in_last_pipeline_stage"
LAYERS = "model.num_layers"
PP = "model.pipeline_model_parallel_size"
VPP = "model.virtual_pipeline_model_parallel_size"
OTHER_SPLITS = ("model.pipeline_model_parallel_layout", "model._pipeline_model_parallel_layout_builder")
ACCOUNT = ("model.account_for_embedding_in_pipeline_split", "model.account_for_loss_in_pipeline_split")


class UnevenPipelineStages(Rule):
    id = "PB016"
    name = "uneven-pipeline-stages"
    severity = Severity.ERROR
    summary = ("num_layers_in_first/last_pipeline_stage must be positive, leave the middle stages an even share "
               "of the layers, and divide by the virtual pipeline size.")
    tags = ("parallelism", "pipeline")
    doc = """## What it does
For a transformer model split over pipeline stages with `model.num_layers_in_first_pipeline_stage`
and/or `model.num_layers_in_last_pipeline_stage` (and no pipeline layout), works out the split
the way Megatron-Core does: the stages named take their layers, the other
`pipeline_model_parallel_size` minus one or two stages ("middle" stages) share the rest. Flags
- a first or last stage size of 0 or less;
- with virtual pipelining, a first or last stage size not divisible by
  `virtual_pipeline_model_parallel_size`;
- layers left over with no middle stage to hold them, or middle stages with no layer left;
- middle layers not divisible by the number of middle stages, or, with virtual pipelining, the
  layers per middle stage not divisible by `virtual_pipeline_model_parallel_size`.

Silent for hybrid (Mamba) stacks, whose layer count comes from their pattern, and when the
embedding/loss accounting flags are set too (PB006 reports that).

## Why it matters
`TransformerConfig.__post_init__` (run by `model.finalize()` in `ConfigContainer.validate()`)
raises at job start: "num_layers_in_first_pipeline_stage must be larger than 0", "number of
layers at first stage: ... must be divisible by virtual pipeline parallel degree ...",
"Mismatch: N middle layers remaining but M middle PP stages available.", "number of layers at
middle stage: N must be divisible by the middle pipeline model parallel size M" and "number of
layers on each middle pipeline rank: N must be divisible by virtual pipeline parallel degree V".
Changing `pipeline_model_parallel_size` on a recipe that places its first and last stages by
hand (GLM-5, Step-3.7, Qwen3-VL perf recipes) is the usual way to get there.

## Example
```python
cfg.model.num_layers = 32
cfg.model.pipeline_model_parallel_size = 4
cfg.model.num_layers_in_first_pipeline_stage = 7   # 32 - 7 = 25 layers over 3 stages
```

## Fix
Choose first/last stage sizes that leave the middle stages an even share (and a multiple of the
virtual pipeline size), or another `pipeline_model_parallel_size`. No automatic fix: the
balance of the stages is the author's choice.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check it the same way).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:1988-2061 (0.16.1:
1362-1434). Oracle (Megatron-Bridge 0.6.2, `llama3_8b_pretrain_config`, 32 layers):
`model.pipeline_model_parallel_size=4 model.num_layers_in_first_pipeline_stage=7` fails with
"number of layers at middle stage: 25 must be divisible bythe middle pipeline model parallel size
3"; `model.num_layers_in_first_pipeline_stage=0` with "num_layers_in_first_pipeline_stage must be
larger than 0"; PP 2 with first 8 and last 8 with "Mismatch: 16 middle layers remaining but 0
middle PP stages available."; PP 4, VPP 2, first 7 with "number of layers at first stage: 7must be
divisible by virtual pipelineparallel degree 2".
"""
    valid = [
        MODEL + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.num_layers_in_first_pipeline_stage = 5\n"
        "cfg.model.num_layers_in_last_pipeline_stage = 9",
        MODEL + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.num_layers_in_last_pipeline_stage = 8\n"
        "cfg.model.virtual_pipeline_model_parallel_size = 2",
        MODEL + "cfg.model.pipeline_model_parallel_size = 2\ncfg.model.num_layers_in_first_pipeline_stage = 10\n"
        "cfg.model.num_layers_in_last_pipeline_stage = 22",
        MODEL + "cfg.model.num_layers_in_first_pipeline_stage = 7\nfor pp in (4, 5):\n"
        "    cfg.model.pipeline_model_parallel_size = pp",
        # the embedding/loss accounting conflict is PB006's finding
        MODEL + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.num_layers_in_first_pipeline_stage = 7\n"
        "cfg.model.account_for_loss_in_pipeline_split = True",
        Example(MODEL + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.num_layers_in_first_pipeline_stage = 5\n"
                "cfg.model.num_layers_in_last_pipeline_stage = 9", version="0.3"),
    ]
    invalid = [
        Example(MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
                "cfg.model.num_layers_in_first_pipeline_stage = 7  # error",
                message="25 layers left for 3 middle stages"),
        Example(MODEL + "cfg.model.pipeline_model_parallel_size = 2\ncfg.model.num_layers_in_first_pipeline_stage = 8\n"
                "cfg.model.num_layers_in_last_pipeline_stage = 8  # error",
                message="16 layers left but no middle stage"),
        Example(MODEL + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.num_layers_in_first_pipeline_stage = 0  # error",
                message="must be larger than 0"),
        Example(MODEL + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.num_layers_in_first_pipeline_stage = 8\n"
                "cfg.model.virtual_pipeline_model_parallel_size = 3  # error",
                message="not divisible by virtual_pipeline_model_parallel_size 3"),
        Example(MODEL + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.num_layers_in_first_pipeline_stage = 6\n"
                "cfg.model.num_layers_in_last_pipeline_stage = 6\ncfg.model.virtual_pipeline_model_parallel_size = 3  # error",
                message="gives 10 layers per middle stage"),
        # modelled on a recipe with hand-placed first/last stages launched with another PP size
        Example(MODEL + "cfg.model.pipeline_model_parallel_size = 4\ncfg.model.num_layers_in_first_pipeline_stage = 5\n"
                "cfg.model.num_layers_in_last_pipeline_stage = 9", dotlist=("model.pipeline_model_parallel_size=6",)),
        Example(MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
                "cfg.model.num_layers_in_first_pipeline_stage = 7  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        stages = {path: value(cfg, path, None) for path in (FIRST, LAST)}
        named = [path for path, size in stages.items() if size is not None]
        if not named or not all(int_values(stages[path]) for path in named):
            return
        layers, par = value(cfg, LAYERS, None), parallel(cfg)
        if not int_values(layers, par.pp) or (par.vpp is not None and not int_values(par.vpp)):
            return
        if is_hybrid_stack(cfg) is not False or not self._only_uneven_split(cfg):
            return
        for path in named:
            yield from self._end_stage(cfg, ctx, path, stages[path], par.vpp)
            if stages[path] <= 0:
                return
        middle_layers = layers - sum(stages[path] for path in named)
        middle_stages = par.pp - len(named)
        yield from self._middle(cfg, ctx, named, middle_layers, middle_stages, par.vpp)

    @staticmethod
    def _only_uneven_split(cfg) -> bool:
        for path in OTHER_SPLITS:
            other = value(cfg, path, None)
            if other is not None and (known(other) or assigned(cfg, path)):
                return False
        return all(value(cfg, path, False) is False for path in ACCOUNT)

    @staticmethod
    def _end_stage(cfg, ctx, path, size, vpp):
        name = path.split(".")[-1]
        if size <= 0:
            yield ctx.report(cfg, f"{path} is {size}; Megatron-Core raises '{name} must be larger than 0' at job "
                                  "start", [path])
        elif vpp is not None and size % vpp != 0:
            yield ctx.report(cfg, f"{path} is {size}, not divisible by virtual_pipeline_model_parallel_size {vpp}; "
                                  "Megatron-Core raises at job start (each virtual stage of it needs the same number "
                                  "of layers)", [path, VPP])

    @staticmethod
    def _middle(cfg, ctx, named, layers, stages, vpp):
        fields = [*named, LAYERS, PP]
        split = " and ".join(f"{path} = {value(cfg, path)}" for path in named)
        total = value(cfg, LAYERS)
        if (layers != 0) != (stages != 0):
            if stages == 0:
                text = f"{layers} layers left but no middle stage to hold them"
            else:
                text = f"no layer left for {stages} middle stage{'s' if stages > 1 else ''}"
            yield ctx.report(cfg, f"num_layers {total} with {split} over pipeline_model_parallel_size "
                                  f"{value(cfg, PP)}: {text}; Megatron-Core raises 'Mismatch: {layers} middle layers "
                                  f"remaining but {stages} middle PP stages available.' at job start", fields)
        elif stages and layers % stages != 0:
            yield ctx.report(cfg, f"num_layers {total} with {split} over pipeline_model_parallel_size "
                                  f"{value(cfg, PP)}: {layers} layers left for {stages} middle stages, not an even "
                                  "share; Megatron-Core raises at job start", fields)
        elif stages and vpp is not None and (layers // stages) % vpp != 0:
            yield ctx.report(cfg, f"num_layers {total} with {split} gives {layers // stages} layers per middle "
                                  f"stage, not divisible by virtual_pipeline_model_parallel_size {vpp}; "
                                  "Megatron-Core raises at job start", [*fields, VPP])
