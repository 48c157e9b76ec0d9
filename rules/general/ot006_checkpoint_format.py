from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, format_value, has_check, known, megatron_fsdp, value

P = "cfg = _pretrain_common()\n"
C = "checkpoint."


class CheckpointFormat(Rule):
    id = "OT006"
    name = "checkpoint-format"
    severity = Severity.ERROR
    summary = "Checkpoint settings that Megatron-Bridge rejects: async_save prerequisites, format vs FSDP/gloo, HF export, ckpt_step without load, main params with optimizer load."
    fixable = True
    tags = ("general", "checkpoint")
    doc = """## What it does
Flags, on `cfg.checkpoint` (and the distributed settings it depends on):
- `async_save` without `save`, without `use_persistent_ckpt_worker`, or with a `ckpt_format`
  other than `torch_dist` (0.6.x also `fsdp_dtensor`);
- `ckpt_format = "fsdp_dtensor"` with `save` or `load` set but Megatron-FSDP off (or with
  torch FSDP2);
- the distributed optimizer without gloo process groups (`dist.use_gloo_process_groups =
  False`) and a `ckpt_format` other than `torch_dist`/`fsdp_dtensor`;
- `also_save_hf_checkpoint` with `fsdp_dtensor`, with local non-persistent checkpoints, or
  without an HF source (`hf_source_path`, `model.hf_model_id` or `tokenizer.tokenizer_model`)
  (0.6.x);
- `ckpt_step` without `load`; `load_main_params_from_ckpt` with `load_optim`.

## Why it matters
`CheckpointConfig.finalize()` and `ConfigContainer.validate()` assert or raise on each of these
at job start ("async_save requires use_persistent_ckpt_worker=True.", "fsdp_dtensor checkpoint
format only supports Megatron FSDP", "ckpt_step=5 specified but checkpoint.load is None",
"load_main_params_from_ckpt must be used with load_optim=False", ...; confirmed with
Megatron-Bridge 0.6.2).

## Example
```python
cfg.checkpoint.async_save = True
cfg.checkpoint.use_persistent_ckpt_worker = False
```

## Fix
Follow the message: enable the persistent worker, use `torch_dist`, set `load`, or set
`load_optim = False`. The fixes proposed are safe (they make the stated intent work).

## Versions
0.3.x and 0.6.x (HF export and `fsdp_dtensor` with async save only in 0.6.x).

## Sources
0.6.2 megatron/bridge/training/config.py:589-628, :1118-1134, :1389-1426; 0.3.1
megatron/bridge/training/config.py:898-918, :1521-1545.
"""
    valid = [
        P + "cfg.checkpoint.async_save = True\ncfg.checkpoint.save = '/ckpt'\ncfg.checkpoint.use_persistent_ckpt_worker = True",
        P + "cfg.checkpoint.ckpt_step = 5\ncfg.checkpoint.load = '/ckpt'",
        P + "cfg.checkpoint.ckpt_format = 'fsdp_dtensor'\ncfg.checkpoint.save = '/ckpt'\ncfg.ddp.use_megatron_fsdp = True",
        P + "cfg.checkpoint.ckpt_step = 5\nfor p in ['/a', None]:\n    cfg.checkpoint.load = p",
        Example(P + "cfg.checkpoint.load_main_params_from_ckpt = True\ncfg.checkpoint.load_optim = False", version="0.3"),
    ]
    invalid = [
        # each fix below replaces a value the recipe wrote: unsafe
        Example(P + "cfg.checkpoint.async_save = True\ncfg.checkpoint.save = '/ckpt'\n"
                "cfg.checkpoint.use_persistent_ckpt_worker = False  # error",
                message="checkpoint.async_save is True, but checkpoint.use_persistent_ckpt_worker is False",
                fixed=P + "cfg.checkpoint.async_save = True\ncfg.checkpoint.save = '/ckpt'\n"
                      "cfg.checkpoint.use_persistent_ckpt_worker = True  # error",
                unsafe=True),
        Example(P + "cfg.checkpoint.save = '/ckpt'\ncfg.checkpoint.ckpt_format = 'fsdp_dtensor'  # error",
                message="the format only supports Megatron-FSDP",
                fixed=P + "cfg.checkpoint.save = '/ckpt'\ncfg.checkpoint.ckpt_format = 'torch_dist'  # error",
                unsafe=True),
        P + "cfg.checkpoint.load = None\ncfg.checkpoint.ckpt_step = 5  # error",
        Example(P + "cfg.checkpoint.load_optim = True  # error\ncfg.checkpoint.load_main_params_from_ckpt = True",
                message="loading main params requires load_optim = False",
                fixed=P + "cfg.checkpoint.load_optim = False  # error\ncfg.checkpoint.load_main_params_from_ckpt = True",
                unsafe=True),
        # load_optim left at its default: the fix adds load_optim = False, safe
        Example(P + "cfg.checkpoint.load_main_params_from_ckpt = True  # error",
                fixed=P + "cfg.checkpoint.load_main_params_from_ckpt = True  # error\ncfg.checkpoint.load_optim = False",
                unsafe=False),
        P + "cfg.checkpoint.ckpt_format = 'fsdp_dtensor'\ncfg.checkpoint.also_save_hf_checkpoint = True  # error",
        Example(P + "cfg.dist.use_gloo_process_groups = False\ncfg.checkpoint.ckpt_format = 'torch'  # error",
                message="checkpoints must use 'torch_dist' or 'fsdp_dtensor', but checkpoint.ckpt_format is 'torch'",
                fixed=P + "cfg.dist.use_gloo_process_groups = False\ncfg.checkpoint.ckpt_format = 'torch_dist'  # error",
                unsafe=True),
        Example(P + "cfg.checkpoint.save = '/ckpt'\ncfg.checkpoint.ckpt_format = 'torch'\n"
                "cfg.checkpoint.async_save = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):

        def get(name, default=None):
            return value(cfg, C + name, default)

        fmt = get("ckpt_format", "torch_dist")
        save, load = get("save"), get("load")
        dist_formats = ("torch_dist", "fsdp_dtensor") if has_check(cfg, "async_save_allows_fsdp_dtensor") else ("torch_dist",)
        if get("async_save", False) is True:
            if known(save) and save is None:
                yield ctx.report(cfg, "checkpoint.async_save is True, but checkpoint.save is None; async saving needs "
                                      "a save path (CheckpointConfig asserts at job start)",
                                 [C + "async_save", C + "save"], primary=C + "async_save")
            worker = get("use_persistent_ckpt_worker", True)
            if known(worker) and worker is False:
                yield ctx.report(cfg, "checkpoint.async_save is True, but checkpoint.use_persistent_ckpt_worker is False; "
                                      "async saving requires the persistent worker (CheckpointConfig asserts at job start)",
                                 [C + "async_save", C + "use_persistent_ckpt_worker"],
                                 fixes=[FixIntent("set", C + "use_persistent_ckpt_worker", True, safe=True,
                                                  description="enable the persistent checkpoint worker")])
            if known(fmt) and fmt not in dist_formats:
                yield ctx.report(cfg, f"checkpoint.async_save is True with checkpoint.ckpt_format = {fmt!r}; async saving "
                                      f"only supports {' or '.join(map(repr, dist_formats))} (validate() asserts at job start)",
                                 [C + "async_save", C + "ckpt_format"])
        saving = (known(save) and save is not None) or (known(load) and load is not None)
        if fmt == "fsdp_dtensor" and saving:
            mfsdp = megatron_fsdp(cfg)
            if mfsdp is False:
                yield ctx.report(cfg, "checkpoint.ckpt_format is 'fsdp_dtensor' with a save/load path, but Megatron-FSDP is "
                                      "not on (ddp.use_megatron_fsdp / dist.use_megatron_fsdp); the format only supports "
                                      "Megatron-FSDP (validate() asserts at job start)",
                                 [C + "ckpt_format", "ddp.use_megatron_fsdp"], primary=C + "ckpt_format",
                                 fixes=[FixIntent("set", C + "ckpt_format", "torch_dist", safe=True,
                                                  description="use torch_dist")])
        gloo = value(cfg, "dist.use_gloo_process_groups", True)
        dist_opt = [value(cfg, "optimizer.use_distributed_optimizer", False), value(cfg, "ddp.use_distributed_optimizer", False)]
        if known(gloo, fmt) and gloo is False and fmt not in dist_formats and any(d is True for d in dist_opt):
            yield ctx.report(cfg, f"dist.use_gloo_process_groups is False with the distributed optimizer, so checkpoints "
                                  f"must use {' or '.join(map(repr, dist_formats))}, but checkpoint.ckpt_format is "
                                  f"{fmt!r} (validate() asserts at job start)",
                             [C + "ckpt_format", "dist.use_gloo_process_groups"],
                             fixes=[FixIntent("set", C + "ckpt_format", "torch_dist", safe=True, description="use torch_dist")])
        if get("also_save_hf_checkpoint", False) is True:
            if fmt == "fsdp_dtensor":
                yield ctx.report(cfg, "checkpoint.also_save_hf_checkpoint is True with checkpoint.ckpt_format = "
                                      "'fsdp_dtensor'; HF export needs 'torch_dist' (CheckpointConfig raises at job start)",
                                 [C + "also_save_hf_checkpoint", C + "ckpt_format"])
            elif get("non_persistent_ckpt_type") == "local":
                yield ctx.report(cfg, "checkpoint.also_save_hf_checkpoint is True with local non-persistent checkpoints; "
                                      "use non_persistent_ckpt_type='global' (CheckpointConfig raises at job start)",
                                 [C + "also_save_hf_checkpoint", C + "non_persistent_ckpt_type"])
            else:
                sources = [get("hf_source_path"), value(cfg, "model.hf_model_id", None),
                           value(cfg, "tokenizer.tokenizer_model", None)]
                if all(known(item) for item in sources) and not any(sources):
                    yield ctx.report(cfg, "checkpoint.also_save_hf_checkpoint is True, but no HF source is set "
                                          "(checkpoint.hf_source_path, model.hf_model_id, tokenizer.tokenizer_model are "
                                          "empty); the HF export needs one (validate() raises at job start)",
                                     [C + "also_save_hf_checkpoint"])
        step = get("ckpt_step")
        if known(step, load) and step is not None and load is None:
            yield ctx.report(cfg, f"checkpoint.ckpt_step is {format_value(step)}, but checkpoint.load is None; set "
                                  f"checkpoint.load to the base checkpoint directory (CheckpointConfig raises at job start)",
                             [C + "ckpt_step", C + "load"])
        main, optim = get("load_main_params_from_ckpt", False), get("load_optim", True)
        if known(main, optim) and main is True and optim is True:
            yield ctx.report(cfg, "checkpoint.load_main_params_from_ckpt is True, but checkpoint.load_optim is True; "
                                  "loading main params requires load_optim = False (CheckpointConfig asserts at job start)",
                             [C + "load_main_params_from_ckpt", C + "load_optim"],
                             fixes=[FixIntent("set", C + "load_optim", False, safe=True, description="set load_optim = False")])

