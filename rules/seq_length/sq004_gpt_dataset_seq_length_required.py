from __future__ import annotations

from mblint.rulekit import BRIDGE_GPT_DATASET, Example, Rule, Severity, dataset_is, known


class GptDatasetSeqLengthRequired(Rule):
    id = "SQ004"
    name = "gpt-dataset-seq-length-required"
    severity = Severity.ERROR
    summary = "GPTDatasetConfig(...) needs seq_length or sequence_length."
    tags = ("seq-length",)
    doc = """## What it does
Flags a `GPTDatasetConfig` (or subclass) built without `seq_length` and without
`sequence_length`, and never given one afterwards.

## Why it matters
`GPTDatasetConfig.__init__` raises "Either `seq_length` or `sequence_length` must be provided."
the moment the recipe builds the config.

## Example
```python
cfg.dataset = GPTDatasetConfig(random_seed=1234, reset_attention_mask=False,
                               reset_position_ids=False, eod_mask_loss=False)
```

## Fix
Pass `seq_length=model.seq_length`. No automatic fix.

## Versions
0.3.x and 0.6.x.

## Sources
0.6.2 megatron/bridge/training/config.py:270-273; 0.3.1 megatron/bridge/training/config.py:423-426.
"""
    _imp = "from megatron.bridge.training.config import GPTDatasetConfig\n"
    valid = [
        "cfg = _pretrain_common()",
        _imp + "cfg = _pretrain_common()\ncfg.dataset = GPTDatasetConfig(random_seed=1, reset_attention_mask=False,\n"
        "    reset_position_ids=False, eod_mask_loss=False, seq_length=4096)",
        _imp + "cfg = _pretrain_common()\nkw = {}\nfor n in (1, 2):\n    kw['seq_length'] = n\n"
        "cfg.dataset = GPTDatasetConfig(random_seed=1, reset_attention_mask=False,\n"
        "    reset_position_ids=False, eod_mask_loss=False, **kw)",
    ]
    invalid = [
        _imp + "cfg = _pretrain_common()\ncfg.dataset = GPTDatasetConfig(random_seed=1, reset_attention_mask=False,  # error\n"
        "    reset_position_ids=False, eod_mask_loss=False)",
        Example(_imp + "cfg = _pretrain_common()\ncfg.dataset = GPTDatasetConfig(random_seed=1, reset_attention_mask=False,  # error\n"
                "    reset_position_ids=False, eod_mask_loss=False)", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, BRIDGE_GPT_DATASET) is not True:
            return
        paths = ("dataset.seq_length", "dataset.sequence_length")
        origins = []
        for path in paths:
            resolved = cfg.get(path)
            if resolved is None:
                continue
            if known(resolved.value):
                return
            if any(origin.kind != "default" for origin in resolved.origins):
                return  # set somewhere, just not knowable
            origins.extend(resolved.origins)
        if not origins:
            return
        site = origins[-1]
        if ctx.editable_paths is not None and site.path not in ctx.editable_paths:
            site = cfg.recipe.origin()
        yield ctx.report(cfg, "GPTDatasetConfig is built without seq_length or sequence_length; one is required",
                         paths, location=site)
