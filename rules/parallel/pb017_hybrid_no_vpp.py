from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, is_hybrid_stack, known, parallel

VPP = "model.virtual_pipeline_model_parallel_size"
HYBRID = ("from megatron.bridge.models import MambaModelProvider\ncfg = _pretrain_common()\n"
          "cfg.model = MambaModelProvider(hidden_size=64, num_attention_heads=4, num_layers=8)\n"
          "cfg.model.pipeline_model_parallel_size = 2\n")
GPT = ("from megatron.bridge.models import GPTModelProvider\ncfg = _pretrain_common()\n"
       "cfg.model = GPTModelProvider(num_layers=8, hidden_size=64, num_attention_heads=4)\n"
       "cfg.model.pipeline_model_parallel_size = 2\n")


class HybridNoVpp(Rule):
    id = "PB017"
    name = "hybrid-no-vpp"
    severity = Severity.ERROR
    summary = "A hybrid (Mamba) model cannot use virtual pipeline parallelism."
    fixable = True
    tags = ("parallelism", "pipeline")
    doc = """## What it does
Flags `model.virtual_pipeline_model_parallel_size` set (not None) on a hybrid (Mamba) model
provider: `MambaModelProvider`, `HybridModelProvider` or a provider derived from them
(Nemotron-H, Nemotron 3 Nano/Super, Falcon-H1...).

## Why it matters
The hybrid provider's `provide()` asserts "Virtual pipeline model parallelism is temporarily
unsupported in Hybrid models due to upstream MCore HybridModel API dependency" (0.3.x-0.5.x:
"... in SSM/Mamaba models ...") when the model is built, after the job has started and the
checkpoint and data set-up have run. `ConfigContainer.validate()` does not catch it. Copying the
interleaved schedule of a transformer recipe onto a hybrid model gets there.

## Example
```python
cfg.model = MambaModelProvider(...)
cfg.model.pipeline_model_parallel_size = 4
cfg.model.virtual_pipeline_model_parallel_size = 2
```

## Fix
Set `model.virtual_pipeline_model_parallel_size = None` (unsafe: the pipeline schedule and its
bubble change).

## Versions
0.3.x to 0.6.x.

## Sources
0.6.2 megatron/bridge/models/hybrid/hybrid_provider.py:295-298 (`provide`); 0.5.1
megatron/bridge/models/mamba/mamba_provider.py:256, 0.3.1 :152. Not run by
`runtime_config_update()`: the oracle accepts `nemotron_3_nano_pretrain_config
model.virtual_pipeline_model_parallel_size=2` with pipeline parallelism, the build is what fails.
"""
    valid = [
        HYBRID,
        HYBRID + "cfg.model.virtual_pipeline_model_parallel_size = None",
        GPT + "cfg.model.virtual_pipeline_model_parallel_size = 2",
        HYBRID + "for vpp in (None, 2):\n    cfg.model.virtual_pipeline_model_parallel_size = vpp",
        Example(HYBRID, version="0.3"),
    ]
    invalid = [
        Example(HYBRID + "cfg.model.virtual_pipeline_model_parallel_size = 2  # error",
                message="temporarily unsupported' when the model is built", unsafe=True,
                fixed=HYBRID + "cfg.model.virtual_pipeline_model_parallel_size = None  # error"),
        # modelled on a transformer recipe's interleaved schedule given to a hybrid model
        Example(HYBRID, dotlist=("model.virtual_pipeline_model_parallel_size=2",)),
        # 0.3.x's Mamba provider names its models otherwise ("SSM/Mamaba"): the common part is quoted
        Example(HYBRID + "cfg.model.virtual_pipeline_model_parallel_size = 2  # error", version="0.3",
                message="asserts 'Virtual pipeline model parallelism is temporarily unsupported' when"),
    ]

    def check(self, cfg, ctx):
        vpp = parallel(cfg).vpp
        if vpp is None or not known(vpp) or is_hybrid_stack(cfg) is not True:
            return
        yield ctx.report(
            cfg,
            f"{VPP} is {vpp} on a hybrid (Mamba) model ({cfg.type_of('model')}); its provide() asserts 'Virtual "
            "pipeline model parallelism is temporarily unsupported' when the model is built",
            [VPP],
            fixes=[FixIntent("set", VPP, None, description=f"set {VPP} to None")],
        )
