from __future__ import annotations

from mblint.rulekit import ABSENT, Example, Rule, Severity, hf_model, int_values, known, parallel, value

MODEL = hf_model("meta-llama/Llama-3.1-8B")


class DeferEmbeddingWgrad(Rule):
    id = "PB012"
    name = "defer-embedding-wgrad"
    severity = Severity.ERROR
    summary = ("defer_embedding_wgrad_compute needs pipeline parallelism, gradient_accumulation_fusion and a "
               "wgrad_deferral_limit of 0 or more.")
    tags = ("parallelism", "pipeline", "comm-overlap")
    doc = """## What it does
Flags deferred embedding weight-gradient computation with `pipeline_model_parallel_size == 1`
or with `model.gradient_accumulation_fusion` False. The effective flag is
`comm_overlap.defer_embedding_wgrad_compute` when a `CommOverlapConfig` is set (its `setup()`
overwrites the model field, to False when left None), otherwise
`model.defer_embedding_wgrad_compute`. Silent when `gradient_accumulation_fusion` is left to
its hardware-dependent default. Also flags a negative deferral limit with the deferral on:
`comm_overlap.wgrad_deferral_limit`, which `setup()` writes into the model and, when left None,
sets to -1; without a `CommOverlapConfig`, `model.wgrad_deferral_limit` (default 0).

## Why it matters
Megatron-Core's `ModelParallelConfig.__post_init__` raises "Cannot defer embedding wgrad
compute when pipeline model parallel is not used" / "... when gradient accumulation fusion is
not used" / "Wgrad deferral limit should be greater than or equal to 0 when it is enabled!" when
`validate()` finalises the model. The last one catches a `CommOverlapConfig` given
`defer_embedding_wgrad_compute=True` alone: its own default limit is -1. Oracle (0.6.2):
`llama3_70b_pretrain_config comm_overlap.defer_embedding_wgrad_compute=True` fails with it, and
passes with `comm_overlap.wgrad_deferral_limit=0` added.

## Example
```python
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, defer_embedding_wgrad_compute=True)
cfg.model.pipeline_model_parallel_size = 1
```

## Fix
Drop the deferral, or use PP > 1 with gradient accumulation fusion and give
`wgrad_deferral_limit` (0: no limit); not automatic.

## Versions
0.3.x and 0.6.x.

## Sources
Megatron-Core 0.19.2 megatron/core/model_parallel_config.py:545-558 (0.16.1: the same three
checks); 0.6.2 megatron/bridge/training/comm_overlap.py:422-437 (limit -1 by default), 594-618
(`setup` overwrites the model fields); 0.3.1 megatron/bridge/training/comm_overlap.py:434.
"""
    valid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.gradient_accumulation_fusion = True\n"
        "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, defer_embedding_wgrad_compute=True,\n"
        "                                     wgrad_deferral_limit=0)",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.gradient_accumulation_fusion = True\ncfg.model.defer_embedding_wgrad_compute = True\n"
        "cfg.model.wgrad_deferral_limit = 2",
        # a CommOverlapConfig that leaves it None overwrites the model field with False
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.defer_embedding_wgrad_compute = True\n"
        "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)",
        # gradient_accumulation_fusion left to its hardware default: unknown
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.defer_embedding_wgrad_compute = True",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 2\n"
                "cfg.model.gradient_accumulation_fusion = True\ncfg.model.defer_embedding_wgrad_compute = True",
                version="0.3"),
    ]
    invalid = [
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 1\n"
        "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, defer_embedding_wgrad_compute=True)  # error",
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.defer_embedding_wgrad_compute = True\ncfg.model.gradient_accumulation_fusion = False  # error",
        # the CommOverlapConfig's own limit is -1
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
                "cfg.model.gradient_accumulation_fusion = True\n"
                "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, defer_embedding_wgrad_compute=True)  # error",
                message="Wgrad deferral limit should be greater than or equal to 0"),
        "cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
        "cfg.model.gradient_accumulation_fusion = True\ncfg.model.defer_embedding_wgrad_compute = True\n"
        "cfg.model.wgrad_deferral_limit = -1  # error",
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.defer_embedding_wgrad_compute = True  # error",
                version="0.3"),
        Example("cfg = _pretrain_common()\n" + MODEL + "cfg.model.pipeline_model_parallel_size = 4\n"
                "cfg.model.gradient_accumulation_fusion = True\n"
                "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False, defer_embedding_wgrad_compute=True)  # error",
                version="0.3"),
    ]

    def check(self, cfg, ctx):
        overlap = cfg.type_of("comm_overlap")
        raw_overlap = cfg.value("comm_overlap")
        if overlap:
            path = "comm_overlap.defer_embedding_wgrad_compute"
            defer = value(cfg, path, None)
            if defer is None:
                return  # setup() writes False into the model
        elif raw_overlap is None or raw_overlap is ABSENT:
            path = "model.defer_embedding_wgrad_compute"
            defer = value(cfg, path, False)
        else:
            return
        if defer is not True:
            return
        pp = parallel(cfg).pp
        fusion = value(cfg, "model.gradient_accumulation_fusion", None)
        if known(pp) and pp == 1:
            message = (f"{path} is True, but pipeline_model_parallel_size is 1; deferring the embedding weight "
                       f"gradient needs pipeline parallelism")
            yield ctx.report(cfg, message, [path, "model.pipeline_model_parallel_size"])
        elif known(fusion) and fusion is False:
            message = (f"{path} is True, but model.gradient_accumulation_fusion is False; deferring the embedding "
                       f"weight gradient needs gradient accumulation fusion")
            yield ctx.report(cfg, message, [path, "model.gradient_accumulation_fusion"])
        yield from self._deferral_limit(cfg, ctx, path, bool(overlap))

    @staticmethod
    def _deferral_limit(cfg, ctx, defer_path, overlap):
        limit_path = "comm_overlap.wgrad_deferral_limit" if overlap else "model.wgrad_deferral_limit"
        limit = value(cfg, limit_path, None)
        shown, primary = f"{limit_path} is {limit}", limit_path
        if overlap and limit is None:
            primary = defer_path
            limit, shown = -1, f"{limit_path} is None, which CommOverlapConfig.setup() turns into -1"
        if not int_values(limit) or limit >= 0:
            return
        yield ctx.report(cfg, f"{defer_path} is True and {shown}; Megatron-Core raises 'Wgrad deferral limit should "
                              "be greater than or equal to 0 when it is enabled!' at job start (0 means no limit)",
                         [limit_path, defer_path], primary=primary)
