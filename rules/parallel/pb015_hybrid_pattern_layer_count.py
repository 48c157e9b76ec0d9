from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, int_values, is_hybrid_stack, known, value

MODEL = ("from megatron.bridge.models import MambaModelProvider\ncfg = _pretrain_common()\n"
         "cfg.model = MambaModelProvider(hidden_size=64, num_attention_heads=4, hybrid_layer_pattern='M-M*-M-')\n")
LAYERS = "model.num_layers"
PATTERN = "model.hybrid_layer_pattern"
OVERRIDE = "model.hybrid_override_pattern"


def pattern_layer_count(pattern: str) -> int:
    """The main decoder's layer count of a hybrid pattern: one symbol a layer, before the first
    MTP separator "/", pipeline-stage separators "|" left out."""
    return len(pattern.split("/")[0].replace("|", ""))


class HybridPatternLayerCount(Rule):
    id = "PB015"
    name = "hybrid-pattern-layer-count"
    severity = Severity.ERROR
    summary = "A hybrid (Mamba) model's num_layers must equal the layer count of its hybrid layer pattern."
    fixable = True
    tags = ("parallelism", "architecture")
    requires = ("field:hybrid_layer_pattern",)
    doc = """## What it does
On a hybrid (Mamba) model provider, flags
- `model.num_layers` set (not None) and different from the number of layers its pattern
  describes: `model.hybrid_layer_pattern`, else the deprecated `model.hybrid_override_pattern`;
  one symbol per layer of the main decoder, before the first `/` (the multi-token-prediction
  part), the pipeline-stage separators `|` not counted;
- both patterns set.

## Why it matters
The provider's `finalize()` (run by `ConfigContainer.validate()`) asserts "num_layers (N) does
not match the number of layers derived from hybrid_layer_pattern (M). Please correct num_layers
or the pattern." (or "... hybrid_override_pattern ...") and "hybrid_override_pattern and
hybrid_layer_pattern cannot both be specified." at job start. Changing `num_layers` to shrink a
hybrid model for a test run, without shortening the pattern, stops the job.

## Example
```python
cfg.model = MambaModelProvider(hybrid_layer_pattern="M-M*-M-")   # 7 layers
cfg.model.num_layers = 8                                       # error
```

## Fix
Set `model.num_layers = None` (safe: the provider derives it from the pattern), or write a
pattern with as many layers.

## Versions
0.4.x and later (the hybrid_layer_pattern field and the check). 0.3.x takes `num_layers` as
given and has no such check.

## Sources
0.6.2 megatron/bridge/models/hybrid/hybrid_provider.py:179-194 (both patterns),
:233-249 (the count); Megatron-Core 0.19.2 megatron/core/models/hybrid/hybrid_layer_allocation.py:128-142
(`get_hybrid_total_layer_count`), :24-25 (`|` and `/`); 0.5.1
megatron/bridge/models/mamba/mamba_provider.py:155-160, :214-230; 0.4.2
megatron/bridge/models/mamba/mamba_provider.py:60-74, :192-197, :251-267. Oracle:
`nemotron_nano_12b_v2_sft_4gpu_h100_bf16_config model.num_layers=32` fails with "num_layers (32)
does not match the number of layers derived from hybrid_layer_pattern (62)".
"""
    valid = [
        MODEL + "cfg.model.num_layers = 7",
        MODEL + "cfg.model.num_layers = None",
        MODEL + "cfg.model.hybrid_layer_pattern = 'M-M|*-M-/*-'\ncfg.model.num_layers = 7",
        # a GPT model has no hybrid pattern to match
        ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
         "cfg.model = GPTModelProvider(num_layers=4, hidden_size=64, num_attention_heads=4)"),
        MODEL + "for n in [7, 8]:\n    cfg.model.num_layers = n",
        # 0.3.x builds the stack from num_layers and the pattern as given
        Example("from megatron.bridge.models import MambaModelProvider\ncfg = _pretrain_common()\n"
                "cfg.model = MambaModelProvider(hidden_size=64, num_attention_heads=4, hybrid_override_pattern='M-M-')\n"
                "cfg.model.num_layers = 7", version="0.3"),
    ]
    invalid = [
        # replacing a value the recipe wrote is unsafe
        Example(MODEL + "cfg.model.num_layers = 8  # error",
                message="num_layers (8) does not match the number of layers derived from hybrid_layer_pattern (7)",
                fixed=MODEL + "cfg.model.num_layers = None  # error", unsafe=True),
        Example(MODEL + "cfg.model.hybrid_layer_pattern = 'M-M|*-M-M/*-'\ncfg.model.num_layers = 7  # error",
                message="(8)"),
        Example(MODEL + "cfg.model.hybrid_layer_pattern = None\ncfg.model.hybrid_override_pattern = 'M-M-'\n"
                "cfg.model.num_layers = 7  # error",
                message="derived from hybrid_override_pattern (4)"),
        Example(MODEL + "cfg.model.hybrid_override_pattern = 'M-M*-M-'  # error",
                message="cannot both be specified"),
        # modelled on a Nemotron-H recipe shrunk on the command line
        Example(MODEL + "cfg.model.num_layers = 7", dotlist=("model.num_layers=32",)),
    ]

    def check(self, cfg, ctx):
        if is_hybrid_stack(cfg) is not True:
            return
        layer_pattern = value(cfg, PATTERN, None)
        override = value(cfg, OVERRIDE, None)
        if not known(layer_pattern, override):
            return
        if layer_pattern is not None and override is not None:
            yield ctx.report(
                cfg,
                f"{OVERRIDE} and {PATTERN} are both set; the provider asserts 'hybrid_override_pattern and "
                "hybrid_layer_pattern cannot both be specified.' at job start (the override pattern is deprecated)",
                [OVERRIDE, PATTERN],
            )
            return
        field, pattern = (PATTERN, layer_pattern) if layer_pattern is not None else (OVERRIDE, override)
        layers = value(cfg, LAYERS, None)
        if not isinstance(pattern, str) or layers is None or not int_values(layers):
            return
        expected = pattern_layer_count(pattern)
        if layers == expected:
            return
        yield ctx.report(
            cfg,
            f"num_layers ({layers}) does not match the number of layers derived from {field.split('.')[1]} "
            f"({expected}); the provider asserts this at job start",
            [LAYERS, field],
            fixes=[FixIntent("set", LAYERS, None, safe=True, description="set num_layers = None (derived from the pattern)")],
        )
