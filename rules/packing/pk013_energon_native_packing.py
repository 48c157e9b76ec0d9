from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dataset_is, has_check, int_values, schema_of, value


class EnergonNativePackingContract(Rule):
    id = "PK013"
    name = "energon-native-packing-contract"
    severity = Severity.ERROR
    summary = "Energon native packing (packing_buffer_size) needs a task encoder that implements it."
    fixable = True
    tags = ("packing", "energon")
    requires = ("field:packing_buffer_size",)
    doc = """## What it does
Flags `EnergonDatasetConfig.packing_buffer_size` set (Energon's native packing) where the task
encoder does not implement it: any task encoder in 0.6.x; one other than the Qwen-VL task
encoder in the releases that added native packing. Also a non-positive value.

## Why it matters
With `packing_buffer_size` set, Megatron-Energon asserts "Both select_samples_to_pack and
pack_selected_samples methods must be provided in the TaskEncoder when using
packing_buffer_size" when the dataloader is built. None of the 0.6.2 Energon task encoders
(`HFEnergonTaskEncoderConfig`, `QwenVLEnergonTaskEncoderConfig`,
`NemotronOmniEnergonTaskEncoderConfig`) implements them, so the job fails after start-up; a
value of 0 or less is rejected by `EnergonDatasetConfig.validate()`. (Later Megatron-Bridge
releases add a native-packing path with its own contract: micro-batch size 1, per-token loss,
no PP, no CUDA graphs, Qwen-VL task encoder.) Use in-batch packing (`enable_in_batch_packing`)
instead.

Megatron-Bridge after 0.6 implements native packing in the Qwen-VL task encoder
(`QwenVLTaskEncoder.select_samples_to_pack`/`pack_selected_samples`) and
`EnergonDatasetConfig.validate()` raises "Energon native sequence packing currently supports
only QwenVLEnergonTaskEncoderConfig" for the others. mblint reads which contract applies from
the Megatron-Bridge source it lints against (that validate() check), not from a version number.

## Example
```python
cfg.dataset.packing_buffer_size = 100     # EnergonDatasetConfig
```

## Fix
Unsafe (changes the data layout): remove `packing_buffer_size` (set None) and use
`enable_in_batch_packing = True` with micro-batch size > 1.

## Versions
0.6.x: every task encoder (`EnergonDatasetConfig`; 0.3.x has no such dataset config). Later
sources with the Qwen-VL native-packing check: task encoders other than the Qwen-VL one.

## Sources
0.6.2 megatron/bridge/data/builders/energon.py:139,163-164,283-310 (packing_buffer_size passed to
EnergonMultiModalDataModule), 203-280 (task encoders built); megatron-energon
task_encoder/base.py `build_batch` (assertion) and `select_samples_to_pack` (NotImplementedError);
the only 0.6.2 task encoders that implement packing are the diffusion ones
(megatron/bridge/diffusion/data/common/diffusion_task_encoder_with_sp.py:81-90). Megatron-Bridge
main (0.7.0 development): data/builders/energon.py:203-204 (the Qwen-VL-only check),
models/qwen_vl/data/energon.py:404-420 (the Qwen-VL task encoder's packing hooks).
"""
    _energon = (
        "from megatron.bridge.data.builders import EnergonDatasetConfig\n"
        "from megatron.bridge.data.builders.energon import QwenVLEnergonTaskEncoderConfig\n"
        "cfg = _sft_common_vlm()\n"
        "cfg.dataset = EnergonDatasetConfig(path='/data/x', seq_length=4096, micro_batch_size=1,\n"
        "    task_encoder=QwenVLEnergonTaskEncoderConfig(hf_processor_path='Qwen/Qwen3-VL-8B-Instruct'))\n"
    )
    valid = [
        _energon,
        _energon + "for n in (None, 4):\n    cfg.dataset.packing_buffer_size = n",
        "cfg = _sft_common_vlm()",
    ]
    invalid = [
        Example(_energon + "cfg.dataset.packing_buffer_size = 100  # error",
                message="no 0.6.x Energon task encoder implements", unsafe=True,
                fixed=_energon + "cfg.dataset.packing_buffer_size = None  # error"),
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, "EnergonDatasetConfig") is not True:
            return
        path = "dataset.packing_buffer_size"
        size = value(cfg, path, None)
        if size is None or not int_values(size):
            return
        fixes = [FixIntent("set", path, None, safe=False, description="remove packing_buffer_size")]
        if size <= 0:
            message = f"{path} is {size}, but it must be greater than 0 when set"
        elif has_check(cfg, "energon_native_packing_qwen_vl"):
            encoder = cfg.type_of("dataset.task_encoder")
            if encoder is None or _is_qwen_vl_encoder(cfg, encoder):
                return
            message = (f"{path} is {size}, but Energon native sequence packing supports only the Qwen-VL task "
                       f"encoder (QwenVLEnergonTaskEncoderConfig), not {encoder}; EnergonDatasetConfig.validate() "
                       "raises; use dataset.enable_in_batch_packing instead")
        else:
            message = (f"{path} is {size}, but Energon native packing needs a task encoder with "
                       "select_samples_to_pack/pack_selected_samples, which no 0.6.x Energon task encoder "
                       "implements; use dataset.enable_in_batch_packing instead")
        yield ctx.report(cfg, message, [path], fixes=fixes)


def _is_qwen_vl_encoder(cfg, type_name: str) -> bool:
    schema = schema_of(cfg)
    spec = schema.find_class(type_name)
    qwen_vl = "QwenVLEnergonTaskEncoderConfig"
    return type_name == qwen_vl if spec is None else schema.is_subclass(spec.qualname, qwen_vl)
