from __future__ import annotations

from mblint.rulekit import (
    Example,
    Rule,
    Severity,
    comm_overlap_present,
    data_parallel_size,
    int_values,
    known,
    knows_field,
    value,
)

P = "cfg = _pretrain_common()\n"  # distributed optimizer on, no CommOverlapConfig
OVERLAP = "cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)\n"
NUM_BUCKETS = "ddp.num_buckets"
BUCKET_SIZE = "ddp.bucket_size"
OVERLAP_BUCKET = "comm_overlap.bucket_size"
DIST_OPT = "ddp.use_distributed_optimizer"
SETUP_BUCKET = 128 * 1024 * 1024  # CommOverlapConfig's bucket with data parallelism


class DdpBuckets(Rule):
    id = "OT019"
    name = "ddp-buckets"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "ddp.num_buckets must be positive and cannot be combined with a bucket size, including the one CommOverlapConfig sets."
    tags = ("general", "comm-overlap")
    doc = """## What it does
In the releases with `ddp.num_buckets` (0.5.x and later), flags a `num_buckets` of 0 or less, and
a `num_buckets` together with a bucket size as the DDP config has it after
`runtime_config_update()`: with a `CommOverlapConfig` and the distributed optimizer, the
overlap config's own `bucket_size`, or when that is None 128 MiB as soon as the data-parallel
size is above 1 (that needs the world size); otherwise `ddp.bucket_size`. A world size read only
from the recipe's name makes the finding a warning.

## Why it matters
Megatron-Core's `DistributedDataParallelConfig.__post_init__`, run by `ddp.finalize()` in
`ConfigContainer.validate()`, asserts "Cannot specify both num_buckets and bucket_size" and
"num_buckets must be greater than 0" at job start. `CommOverlapConfig.setup()` writes its bucket
size into the DDP config before that, so on a recipe with communication overlap (the large
Llama, DeepSeek and Qwen recipes) `ddp.num_buckets` alone fails once the job has data
parallelism.

## Example
```python
cfg.comm_overlap = CommOverlapConfig(tp_comm_overlap=False)   # data-parallel size 2
cfg.ddp.num_buckets = 4
```

## Fix
Choose one: a bucket count (`comm_overlap.bucket_size` cannot be None then, so drop the count
on recipes with a CommOverlapConfig) or a bucket size. No automatic fix: the bucketing is the
author's choice.

## Versions
0.5.x and 0.6.x (Megatron-Core 0.18 added `num_buckets` with these checks).

## Sources
Megatron-Core 0.19.2 megatron/core/distributed/distributed_data_parallel_config.py:269-271; 0.6.2
megatron/bridge/training/comm_overlap.py:562-582 (128 MiB with data parallelism), 634-642 (applied
to the DDP config with the distributed optimizer); 0.5.1 the same (:557-564, :626). Oracle (0.6.2):
`llama3_70b_pretrain_config ddp.num_buckets=4` at 64 GPUs (data-parallel size 2) fails with
"Cannot specify both num_buckets and bucket_size"; `llama3_8b_pretrain_config ddp.num_buckets=4`
(no CommOverlapConfig) is accepted, `ddp.num_buckets=4 ddp.bucket_size=1000` fails with that
message and `ddp.num_buckets=0` with "num_buckets must be greater than 0".
"""
    valid = [
        P + "cfg.ddp.num_buckets = 4",
        Example(P + OVERLAP + "cfg.ddp.num_buckets = 4"),  # the world size unknown: silent
        Example(P + OVERLAP + "cfg.ddp.num_buckets = 4", world_size=1),
        Example(P + "cfg.ddp.bucket_size = 1000", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.ddp.bucket_size = 1000\ncfg.ddp.num_buckets = 4  # error",
                message="Cannot specify both num_buckets and bucket_size"),
        Example(P + "cfg.ddp.num_buckets = 0  # error", message="num_buckets must be greater than 0"),
        Example(P + OVERLAP + "cfg.ddp.num_buckets = 4  # error", world_size=16,
                message="which CommOverlapConfig.setup() sets to 128 MiB"),
        # modelled on a bucket count given on the launch line to a recipe with communication overlap
        Example(P + OVERLAP, world_size=16, dotlist=("ddp.num_buckets=4",)),
    ]

    def check(self, cfg, ctx):
        if not knows_field(cfg, "num_buckets"):
            return
        buckets = value(cfg, NUM_BUCKETS, None)
        if not int_values(buckets):
            return
        if buckets <= 0:
            yield ctx.report(cfg, f"{NUM_BUCKETS} is {buckets}; Megatron-Core asserts 'num_buckets must be greater "
                                  "than 0' at job start", [NUM_BUCKETS])
            return
        size, shown, fields, from_world = self._bucket_size(cfg, ctx)
        if size is None or not known(size):
            return
        severity = Severity.WARNING if from_world and ctx.world_size_from_name else None
        yield ctx.report(cfg, f"{NUM_BUCKETS} is {buckets} and {shown}; Megatron-Core asserts 'Cannot specify both "
                              "num_buckets and bucket_size' at job start", [NUM_BUCKETS, *fields],
                         primary=NUM_BUCKETS, severity=severity)

    @staticmethod
    def _bucket_size(cfg, ctx):
        """(the DDP bucket size after setup(), how it came, its fields, whether the world size decided it)."""
        own = value(cfg, BUCKET_SIZE, None)
        present, dist_opt = comm_overlap_present(cfg), value(cfg, DIST_OPT, None)
        if present is False or dist_opt is False:
            return own, f"{BUCKET_SIZE} is {own}", [BUCKET_SIZE], False
        if present is not True or dist_opt is not True:
            return None, "", [], False
        overlap_size = value(cfg, OVERLAP_BUCKET, None)
        if overlap_size is not None:
            return overlap_size, f"{OVERLAP_BUCKET} is {overlap_size} (written into the DDP config)", \
                [OVERLAP_BUCKET], False
        dp = data_parallel_size(cfg, ctx.world_size)
        if not int_values(dp) or dp <= 1:
            return None, "", [], False
        return SETUP_BUCKET, (f"{OVERLAP_BUCKET} is None, which CommOverlapConfig.setup() sets to 128 MiB with a "
                              f"data-parallel size of {dp}"), [], True
