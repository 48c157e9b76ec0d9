from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    hf_model,
    in_batch_packing,
    knows_field,
    model_family_hints,
    offline_packing,
    some_packing_known_on,
    specs_path,
    value,
)

# (family label, substrings of the HF id / recipe module, which packing is unsupported)
_OPT_OUTS = (
    ("Qwen3-Next", ("qwen3-next", "qwen3_next"), "offline"),
    ("GLM-4.5", ("glm-4.5", "glm45"), "offline"),
    ("Qwen3.5-VL", ("qwen3.5-", "qwen35_vl"), "in-batch"),
)


class ModelFamilyPackingOptOut(Rule):
    id = "PK012"
    name = "model-family-packing-opt-out"
    severity = Severity.WARNING
    summary = "Some model families' recipes turn a packing mode off on purpose."
    fixable = True
    tags = ("packing",)
    doc = """## What it does
Detects the model family from `model.hf_model_id`, `tokenizer.tokenizer_model` (recipes set it
to the Hugging Face id) or the recipe module and function name, and flags the packing mode that
Megatron-Bridge's own recipes disable for that family: offline packing for Qwen3-Next and GLM-4.5
(SFT and PEFT), in-batch packing for Qwen3.5-VL (which defers packing to the step,
`defer_in_batch_packing_to_step = True`).

## Why it matters
The recipes say "does NOT support offline packing"; nothing in `validate()` enforces it, so a
re-enabled flag starts a run the maintainers do not support (a warning, not verified to crash).

## Example
```python
cfg = qwen3_next_80b_a3b_sft_config()
cfg.dataset.enable_offline_packing = True
```

## Fix
Unsafe (changes the data layout): turn the packing mode back off.

## Versions
0.3.x (Qwen3-Next, GLM-4.5: `packed_sequence_specs`) and 0.6.x.

## Sources
0.6.2 megatron/bridge/recipes/qwen/h100/qwen3_next.py:162-163; recipes/glm/h100/glm45.py:295-299,430-434,
575-579,719-723; recipes/qwen_vl/h100/qwen35_vl.py:371-372 (and 471, 571, 671, 769);
0.3.1 megatron/bridge/recipes/qwen/qwen3_next.py:149-159; recipes/glm/glm45.py:281-290.
"""
    _next = (hf_model("Qwen/Qwen3-Next-80B-A3B-Instruct")
             + "cfg.tokenizer.tokenizer_model = 'Qwen/Qwen3-Next-80B-A3B-Instruct'\n")
    valid = [
        "cfg = _sft_common()\n" + _next + "cfg.dataset.enable_offline_packing = False\ncfg.dataset.offline_packing_specs = None",
        "cfg = _sft_common()\ncfg.tokenizer.tokenizer_model = 'meta-llama/Meta-Llama-3-8B'",
        "cfg = _sft_common()\nfor t in ('a', 'b'):\n    cfg.tokenizer.tokenizer_model = t",
    ]
    invalid = [
        # off as the Qwen3-Next recipe has it: no flag, no specs
        Example("cfg = _sft_common()\n" + _next + "cfg.dataset.enable_offline_packing = True  # error",
                message="Megatron-Bridge's Qwen3-Next recipes turn it off", unsafe=True,
                fixed="cfg = _sft_common()\n" + _next + "cfg.dataset.enable_offline_packing = False  # error\n"
                      "cfg.dataset.offline_packing_specs = None"),
        "cfg = _sft_common_vlm()\ncfg.tokenizer.tokenizer_model = 'Qwen/Qwen3.5-9B'\n"
        "cfg.dataset.enable_in_batch_packing = True  # error",
    ]

    precondition = some_packing_known_on

    def check(self, cfg, ctx):
        if offline_packing(cfg) is not True and in_batch_packing(cfg) is not True:
            return  # no packing on for a family to turn off
        hints = model_family_hints(cfg)
        for family, needles, mode in _OPT_OUTS:
            source = next((where for text, where in hints if any(n in text for n in needles)), None)
            if source is None:
                continue
            if mode == "offline" and offline_packing(cfg) is True:
                flag_field = knows_field(cfg, "enable_offline_packing")
                flag = "dataset.enable_offline_packing" if flag_field else specs_path(cfg)
                fixes = [FixIntent("set", flag, False if flag_field else None, safe=False,
                                   description="turn offline packing off")]
                if flag_field:
                    fixes.append(FixIntent("set", specs_path(cfg), None, safe=False,
                                           description="set offline_packing_specs to None"))
            elif mode == "in-batch" and in_batch_packing(cfg) is True:
                flag = "dataset.enable_in_batch_packing"
                fixes = [FixIntent("set", flag, False, safe=False, description="turn in-batch packing off")]
            else:
                continue
            where = "recipe name" if source == "recipe" else source
            fields = [flag] if value(cfg, flag, None) is not None else []
            yield ctx.report(
                cfg,
                f"{mode} sequence packing is on ({flag}), but Megatron-Bridge's {family} recipes turn it off as "
                f"unsupported (model family from {where})",
                fields, fixes=fixes,
            )
            return
