from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, int_values, is_hybrid_stack, known, value

MODEL = ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
         "cfg.model = GPTModelProvider(num_layers=8, hidden_size=64, num_attention_heads=4)\n")
FREQ = "model.no_rope_freq"
LAYERS = "model.num_layers"


class NoRopeFreqLayers(Rule):
    id = "PB020"
    name = "no-rope-freq-layers"
    severity = Severity.ERROR
    summary = "model.no_rope_freq must divide num_layers (an int) or have one entry per layer (a list)."
    tags = ("parallelism", "architecture")
    doc = """## What it does
For a transformer model (not a hybrid stack) with `model.no_rope_freq` set, flags an int that
does not divide `model.num_layers` and a list whose length is not `model.num_layers`.

## Why it matters
`no_rope_freq` says which layers skip rotary embeddings (Llama 4, EXAONE): every N-th layer, or
a 0/1 flag per layer. Megatron-Core's `TransformerConfig.__post_init__` (run by `model.finalize()`
in `ConfigContainer.validate()`) asserts "no_rope_freq=5 should be divisible by num_layers=32."
or "Length of no_rope list (4) must match the number of layers (32)" at job start. Shrinking
`num_layers` for a quick test of such a model, with its per-layer list left as it was, gets
there.

## Example
```python
cfg.model.num_layers = 8
cfg.model.no_rope_freq = [0, 0, 0, 1] * 12     # 48 entries
```

## Fix
Give `no_rope_freq` one entry per layer (or a period dividing the layer count). No automatic
fix: which layers skip RoPE is the architecture's choice.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check it the same way).

## Sources
Megatron-Core 0.19.2 megatron/core/transformer/transformer_config.py:2813-2828. Oracle (0.6.2,
`llama3_8b_pretrain_config`, 32 layers): `model.no_rope_freq=5` fails with "no_rope_freq=5 should be
divisible by num_layers=32."; `model.no_rope_freq=[0,1,0,1]` with "Length of no_rope list (4) must
match the number of layers (32)"; `model.no_rope_freq=4` is accepted.
"""
    valid = [
        MODEL + "cfg.model.no_rope_freq = 4",
        MODEL + "cfg.model.no_rope_freq = [0, 0, 0, 1] * 2",
        MODEL + "cfg.model.no_rope_freq = None",
        MODEL + "for n in (3, 4):\n    cfg.model.no_rope_freq = n",
        Example(MODEL + "cfg.model.no_rope_freq = 4", version="0.3"),
    ]
    invalid = [
        Example(MODEL + "cfg.model.no_rope_freq = 3  # error", message="no_rope_freq=3 should be divisible by num_layers=8"),
        Example(MODEL + "cfg.model.no_rope_freq = [0, 0, 0, 1] * 12\ncfg.model.num_layers = 8  # error",
                message="Length of no_rope list (48) must match the number of layers (8)"),
        # modelled on a test run that shrinks a model whose RoPE-free layers are listed per layer
        Example(MODEL + "cfg.model.num_layers = 48\ncfg.model.no_rope_freq = [0, 0, 0, 1] * 12",
                dotlist=("model.num_layers=8",)),
        Example(MODEL + "cfg.model.no_rope_freq = 3  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        freq, layers = value(cfg, FREQ, None), value(cfg, LAYERS, None)
        if not freq or not known(freq) or not int_values(layers) or is_hybrid_stack(cfg) is not False:
            return
        if isinstance(freq, int) and not isinstance(freq, bool):
            if layers % freq != 0:
                yield ctx.report(cfg, f"{FREQ} is {freq}, which does not divide num_layers {layers}; Megatron-Core "
                                      f"asserts 'no_rope_freq={freq} should be divisible by num_layers={layers}.' at "
                                      "job start", [FREQ, LAYERS])
        elif isinstance(freq, (list, tuple)) and len(freq) != layers:
            yield ctx.report(cfg, f"{FREQ} lists {len(freq)} layers but num_layers is {layers}; Megatron-Core asserts "
                                  f"'Length of no_rope list ({len(freq)}) must match the number of layers ({layers})' "
                                  "at job start", [FREQ, LAYERS])
