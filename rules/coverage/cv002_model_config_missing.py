from __future__ import annotations

from mblint.rulekit import (
    COVERAGE_TAG,
    MODEL_CONFIG_INCOMPLETE,
    MODEL_CONFIG_MISSING,
    Example,
    Rule,
    Severity,
    gaps,
    hf_model,
    report_gap,
)

MODEL = hf_model("example-org/not-in-any-cache").rstrip("\n")
# the model's name comes from an import mblint cannot read
MODEL_FROM_IMPORT = hf_model("x").replace("'x'", "MODEL_ID")


class ModelConfigMissing(Rule):
    id = "CV002"
    name = "model-config-not-found"
    severity = Severity.INFO
    summary = "A Hugging Face model's config.json is not at hand: the checks that need its architecture did not run."
    tags = (COVERAGE_TAG,)
    doc = """## What it does
Reports an `AutoBridge.from_hf_pretrained("org/name")` model whose `config.json` mblint did not
find (a local model folder, a folder named by `hf-config-paths`, or the local Hugging Face hub
cache), at the call, naming the model. One finding per call, however many recipes reach it.
Also reports a config.json that was read but leaves out keys whose default mblint does not
know (the transformers configuration class of its `model_type` is neither at hand nor in the
facts mblint bundles for the transformers release Megatron-Bridge pins, or it computes the key
in a way mblint does not read), naming the provider fields that stay unknown and the keys.

## Why it matters
The provider class and the architecture (layers, attention and key-value heads, hidden and
FFN sizes, experts, vocabulary) come from that file; without it they are unknown and the checks
that need them did not run: heads and layers divisible by the parallel sizes, pipeline layouts,
expert parallelism, MoE dispatcher and model-kind checks. Info, not a warning: the rest of the
job was checked, and a machine without the model's files (a laptop, CI) is common; the finding
says what to fetch for a full check, and `--fail-on info` makes it fail a run.

## Example
```python
cfg.model = AutoBridge.from_hf_pretrained("meta-llama/Llama-3.2-1B").to_megatron_provider()
```

## Fix
Put the config where mblint reads it, never from the network: `huggingface-cli download
ORG/NAME config.json` (the local Hugging Face cache; `HF_HUB_CACHE` or `HF_HOME` say where), or
a folder of `ORG/NAME/config.json` files named by `hf-config-paths` in the settings. No
automatic fix. For a config.json that leaves keys out, make the
transformers source readable (`--search-path` to a folder holding `transformers/`).

## Versions
All.

## Sources
mblint's Hugging Face config reader (README, "Model architecture from Hugging Face configs");
Megatron-Bridge `AutoBridge.from_hf_pretrained` / `to_megatron_provider`.
"""
    valid = [
        "cfg = _pretrain_common()",
        "cfg = _pretrain_common()\ncfg.model.num_layers = 4",
    ]
    invalid = [
        Example("cfg = _pretrain_common()\n" + MODEL + "  # error",
                message="example-org/not-in-any-cache: its config.json is not available here"),
        Example("cfg = _pretrain_common()\nfrom mycompany.models import MODEL_ID\n"
                + MODEL_FROM_IMPORT.rstrip("\n") + "  # error",
                message="the model's name is unknown here"),
    ]

    def check(self, cfg, ctx):
        for gap in gaps(cfg, MODEL_CONFIG_INCOMPLETE):
            yield report_gap(ctx, cfg, gap, (
                f"{gap.subject or 'the model'}: its config.json leaves out keys whose default is unknown here, "
                f"so {gap.part} stay unknown and the checks that need them did not run: {gap.source}"))
        for gap in gaps(cfg, MODEL_CONFIG_MISSING):
            if not gap.subject:
                yield report_gap(ctx, cfg, gap, (
                    "the model's name is unknown here, so its config.json cannot be read: the model's provider class "
                    "and architecture are unknown and the checks that need them did not run"))
                continue
            yield report_gap(ctx, cfg, gap, (
                f"{gap.subject}: its config.json is not available here, so the model's provider class and "
                "architecture (layers, heads, hidden sizes, experts, vocabulary) are unknown and the checks that "
                "need them did not run; put it in the local Hugging Face cache (`huggingface-cli download "
                f"{gap.subject} config.json`) or in a folder named by `hf-config-paths` in the settings"))
