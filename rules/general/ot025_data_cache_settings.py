from __future__ import annotations

from mblint.rulekit import ABSENT, Example, Rule, Severity, dataset_is, known, value

P = "cfg = _pretrain_common()\n"  # a GPTDatasetConfig without path_to_cache
FAST = "dataset.fast_cache_load"
DEFER = "dataset.defer_npy_index_mmap"
CACHE = "dataset.path_to_cache"
BLEND = "dataset.blend"
DATA_PATH = "dataset.data_path"


class DataCacheSettings(Rule):
    id = "OT025"
    name = "data-cache-settings"
    severity = Severity.ERROR
    summary = ("fast_cache_load and defer_npy_index_mmap need dataset.path_to_cache; fast_cache_load takes per-split "
               "data, not a blend.")
    tags = ("general", "dataset")
    doc = """## What it does
On a GPT dataset config (`GPTDatasetConfig` or its mock variant), flags
- `dataset.fast_cache_load = True` or `dataset.defer_npy_index_mmap = True` with
  `dataset.path_to_cache` None;
- `dataset.fast_cache_load = True` with a `dataset.blend` (or, in 0.6.x, a `dataset.data_path`,
  which becomes the blend).

## Why it matters
Megatron-Core's `BlendedMegatronDatasetConfig.__post_init__`, run by the dataset's `finalize()` in
`ConfigContainer.validate()`, asserts "--data-cache-path must be provided when using
--dataloader-fast-cache-load.", "--dataloader-fast-cache-load and --data-path cannot be used
together." and "--data-cache-path must be provided when using --dataloader-defer-npy-index-mmap."
at job start. Both options read index files built in the cache directory by an earlier run.

## Example
```python
cfg.dataset.fast_cache_load = True      # dataset.path_to_cache is None
```

## Fix
Give `dataset.path_to_cache` (the directory the indexes were built in), and per-split data
(`blend_per_split`) with the fast cache load. No automatic fix: the path is the author's.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check them the same way).

## Sources
Megatron-Core 0.19.2 megatron/core/datasets/blended_megatron_dataset_config.py:100-113; 0.6.2
megatron/bridge/training/config.py:305-312 (data_path becomes the blend before). Oracle (0.6.2,
`llama3_8b_pretrain_config`): `dataset.fast_cache_load=True` fails with "--data-cache-path must be
provided when using --dataloader-fast-cache-load."; with `dataset.path_to_cache=/c
dataset.blend=(['/a'],None)` with "--dataloader-fast-cache-load and --data-path cannot be used
together..."; `dataset.defer_npy_index_mmap=True` with "--data-cache-path must be provided when using
--dataloader-defer-npy-index-mmap."; `fast_cache_load=True path_to_cache=/c` is accepted.
"""
    valid = [
        P + "cfg.dataset.path_to_cache = '/cache'\ncfg.dataset.fast_cache_load = True",
        P + "cfg.dataset.path_to_cache = '/cache'\ncfg.dataset.defer_npy_index_mmap = True",
        P + "for path in (None, '/cache'):\n    cfg.dataset.path_to_cache = path\ncfg.dataset.fast_cache_load = True",
        Example(P + "cfg.dataset.path_to_cache = '/cache'\ncfg.dataset.fast_cache_load = True", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.dataset.fast_cache_load = True  # error",
                message="--data-cache-path must be provided when using --dataloader-fast-cache-load."),
        Example(P + "cfg.dataset.defer_npy_index_mmap = True  # error",
                message="--data-cache-path must be provided when using --dataloader-defer-npy-index-mmap."),
        Example(P + "cfg.dataset.path_to_cache = '/cache'\ncfg.dataset.blend = (['/data/a'], None)\n"
                "cfg.dataset.fast_cache_load = True  # error",
                message="--dataloader-fast-cache-load and --data-path cannot be used together"),
        # modelled on the fast cache load turned on from the command line without the cache directory
        Example(P, dotlist=("dataset.fast_cache_load=true",)),
        Example(P + "cfg.dataset.fast_cache_load = True  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, "GPTDatasetConfig") is not True:
            return
        cache = value(cfg, CACHE, None)
        if not known(cache):
            return
        for path, option in ((FAST, "dataloader-fast-cache-load"), (DEFER, "dataloader-defer-npy-index-mmap")):
            if value(cfg, path, False) is True and cache is None:
                yield ctx.report(cfg, f"{path} is True but {CACHE} is None; Megatron-Core asserts '--data-cache-path "
                                      f"must be provided when using --{option}.' at job start", [path, CACHE],
                                 primary=path)
        if value(cfg, FAST, False) is True and dataset_is(cfg, "MockGPTDatasetConfig") is False:
            blend, data_path = value(cfg, BLEND, None), value(cfg, DATA_PATH, None)
            source = BLEND if known(blend) and blend else (DATA_PATH if blend is None and known(data_path)
                                                           and data_path not in (None, ABSENT) and data_path else None)
            if source:
                yield ctx.report(cfg, f"{FAST} is True with {source} set; Megatron-Core asserts "
                                      "'--dataloader-fast-cache-load and --data-path cannot be used together.' at job "
                                      "start (use per-split data)", [FAST, source], primary=FAST)
