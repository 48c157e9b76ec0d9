from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, dataset_is, known, value

P = "cfg = _pretrain_common()\n"  # a GPTDatasetConfig with split = "9999,8,2" and no blend (mock data)
BLEND = "dataset.blend"
PER_SPLIT = "dataset.blend_per_split"
SPLIT = "dataset.split"
MOCK = ("from megatron.bridge.training.config import MockGPTDatasetConfig\n"
        "cfg.dataset = MockGPTDatasetConfig(seq_length=4096, random_seed=1234, reset_attention_mask=False,\n"
        "                                   reset_position_ids=False, eod_mask_loss=False, split='9999,8,2')\n")
SPLITS = 3  # Megatron-Core's Split enum: train, valid, test


def _plain(raw) -> bool:
    """A value known all the way down (lists and tuples of known items)."""
    if not known(raw):
        return False
    if isinstance(raw, (list, tuple)):
        return all(_plain(item) for item in raw)
    return True


def _weights_mismatch(blend) -> tuple[int, int] | None:
    """(prefixes, weights) when a (prefixes, weights) blend has unequal counts, else None."""
    if not isinstance(blend, (list, tuple)) or len(blend) != 2:
        return None
    prefixes, weights = blend
    if weights is None or not isinstance(prefixes, (list, tuple)) or not isinstance(weights, (list, tuple)):
        return None
    return None if len(prefixes) == len(weights) else (len(prefixes), len(weights))


class DatasetBlend(Rule):
    id = "OT018"
    name = "dataset-blend"
    severity = Severity.ERROR
    summary = ("A GPT dataset's blend needs a split and as many weights as prefixes; blend_per_split excludes blend "
               "and split and has one entry per split.")
    tags = ("general", "dataset")
    doc = """## What it does
On a `MockGPTDatasetConfig` dataset, flags `dataset.blend` or `dataset.blend_per_split` set
(the mock data set takes no data paths). On another `GPTDatasetConfig` dataset, flags
- with `dataset.blend_per_split` holding a blend: `dataset.blend` set too, `dataset.split` set
  (the recipes' `_pretrain_common()` sets `split = "9999,8,2"`), a length other than 3 (train,
  validation, test), or a split's blend with more or fewer weights than prefixes;
- otherwise, with `dataset.blend` set: more or fewer weights than prefixes, or `dataset.split`
  None.

## Why it matters
Megatron-Core's `BlendedMegatronDatasetConfig.__post_init__`, run by the dataset's `finalize()`
in `ConfigContainer.validate()`, asserts "blend and blend_per_split are incompatible", "split
and blend_per_split are incompatible", "blend_per_split must contain 3 blends", "blend per split
prefixes and weights must be equal in number", "blend prefixes and weights must be equal in
number" and "split must be provided when blend is not None" at job start; the mock config's
`finalize()` raises "got an unexpected keyword argument 'blend'" (or 'blend_per_split'). Moving a
recipe to per-split data paths while it keeps its `split` string, or giving data paths to a recipe
built on mock data, are the usual ways to get there.

## Example
```python
cfg = llama3_8b_pretrain_config()     # dataset.split = "9999,8,2"
cfg.dataset.blend_per_split = [(["/data/train"], None), (["/data/valid"], None), None]
```

## Fix
With `blend_per_split`, set `dataset.split = None` and `dataset.blend = None`; give a weight per
prefix or None for equal weights. For real data on a mock recipe, replace `cfg.dataset` with a
`GPTDatasetConfig`. No automatic fix: the data layout is the author's choice.

## Versions
0.3.x to 0.6.x (Megatron-Core 0.16 to 0.19 check it the same way). A blend built from
`dataset.data_path` (0.6.x) is left alone.

## Sources
Megatron-Core 0.19.2 megatron/core/datasets/blended_megatron_dataset_config.py:114-136 (0.16.1: the
same asserts), megatron/core/datasets/utils.py:14-17 (three splits); 0.6.2
megatron/bridge/training/config.py:298-321 (`GPTDatasetConfig.finalize` runs them; blend from
data_path), :374-389 (the mock config refuses blends, then drops them; 0.3.1 :508-520). Oracle (0.6.2, `llama3_8b_pretrain_config`):
`dataset.blend_per_split=[(['/a'],None),(['/b'],None),None]` fails with "split and blend_per_split
are incompatible"; `dataset.blend=(['/a','/b'],[0.5])` with "blend prefixes and weights must be equal
in number"; a blend with `dataset.split=None` with "split must be provided when blend is not None";
blend and blend_per_split with "blend and blend_per_split are incompatible"; two per-split entries
with "blend_per_split must contain 3 blends"; a Llama-3 8B recipe given Megatron-Bridge's mock dataset
preset and `dataset.blend=(['/a'],None)` fails with "got an unexpected keyword argument 'blend'".
"""
    valid = [
        P + "cfg.dataset.blend = (['/data/a', '/data/b'], [0.3, 0.7])",
        P + "cfg.dataset.split = None\ncfg.dataset.blend_per_split = [(['/data/train'], None), (['/data/valid'], None), None]",
        P + "cfg.dataset.blend = (['/data/a', '/data/b'], None)",
        P + "cfg.dataset.blend_per_split = [None, None, None]",
        P + MOCK + "cfg.dataset.blend = None",
        P + "for weights in ([0.5], [0.5, 0.5]):\n    cfg.dataset.blend = (['/data/a', '/data/b'], weights)",
        Example(P + "cfg.dataset.blend = (['/data/a', '/data/b'], [0.3, 0.7])", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.dataset.blend_per_split = [(['/data/train'], None), (['/data/valid'], None), None]  # error",
                message="split and blend_per_split are incompatible"),
        Example(P + "cfg.dataset.blend = (['/data/a', '/data/b'], [0.5])  # error",
                message="blend prefixes and weights must be equal in number"),
        Example(P + "cfg.dataset.blend = (['/data/a'], None)\ncfg.dataset.split = None  # error",
                message="split must be provided when blend is not None"),
        Example(P + "cfg.dataset.split = None\ncfg.dataset.blend = (['/data/a'], None)\n"
                "cfg.dataset.blend_per_split = [(['/data/train'], None), (['/data/valid'], None), None]  # error",
                message="blend and blend_per_split are incompatible"),
        Example(P + "cfg.dataset.split = None\ncfg.dataset.blend_per_split = [(['/data/train'], None), "
                "(['/data/valid'], None)]  # error", message="blend_per_split must contain 3 blends"),
        Example(P + "cfg.dataset.split = None\ncfg.dataset.blend_per_split = [(['/data/t1', '/data/t2'], [1.0]), "
                "None, None]  # error", message="blend per split prefixes and weights must be equal in number"),
        Example(P + MOCK + "cfg.dataset.blend = (['/data/a'], None)  # error",
                message="got an unexpected keyword argument 'blend'"),
        # modelled on per-split data paths given on the launch line to a recipe that keeps its split
        Example(P, dotlist=("dataset.blend_per_split=[[[/data/train],null],[[/data/valid],null],null]",)),
        Example(P + "cfg.dataset.blend = (['/data/a', '/data/b'], [0.5])  # error", version="0.3"),
    ]

    def check(self, cfg, ctx):
        mock = dataset_is(cfg, "MockGPTDatasetConfig")
        if dataset_is(cfg, "GPTDatasetConfig") is not True or not known(mock):
            return
        blend, per_split, split = value(cfg, BLEND, None), value(cfg, PER_SPLIT, None), value(cfg, SPLIT, None)
        if mock:
            for path, raw in ((BLEND, blend), (PER_SPLIT, per_split)):
                if _plain(raw) and raw:
                    name = path.split(".")[1]
                    yield ctx.report(cfg, f"{path} is set on a MockGPTDatasetConfig; its finalize() raises 'got an "
                                          f"unexpected keyword argument '{name}'' at job start (mock data takes no "
                                          "data paths)", [path])
                    return
            return
        if not _plain(blend) or not _plain(per_split) or not known(split):
            return
        if isinstance(per_split, (list, tuple)) and any(per_split):
            yield from self._per_split(cfg, ctx, blend, per_split, split)
            return
        if blend is None:
            return
        counts = _weights_mismatch(blend)
        if counts:
            yield ctx.report(cfg, f"{BLEND} has {counts[0]} prefixes but {counts[1]} weights; Megatron-Core asserts "
                                  "'blend prefixes and weights must be equal in number' at job start", [BLEND])
        if split is None:
            yield ctx.report(cfg, f"{BLEND} is set but {SPLIT} is None; Megatron-Core asserts 'split must be "
                                  "provided when blend is not None' at job start", [SPLIT, BLEND])

    @staticmethod
    def _per_split(cfg, ctx, blend, per_split, split):
        if blend is not None:
            yield ctx.report(cfg, f"{PER_SPLIT} and {BLEND} are both set; Megatron-Core asserts 'blend and "
                                  "blend_per_split are incompatible' at job start", [PER_SPLIT, BLEND])
        if split is not None:
            yield ctx.report(cfg, f"{PER_SPLIT} is set and so is {SPLIT} ({split!r}); Megatron-Core asserts 'split "
                                  f"and blend_per_split are incompatible' at job start: set {SPLIT} = None",
                             [PER_SPLIT, SPLIT], primary=PER_SPLIT)
        if len(per_split) != SPLITS:
            yield ctx.report(cfg, f"{PER_SPLIT} has {len(per_split)} entries; Megatron-Core asserts 'blend_per_split "
                                  f"must contain {SPLITS} blends' (train, validation, test; None for a split without "
                                  "data) at job start", [PER_SPLIT])
            return
        for entry in per_split:
            counts = None if entry is None else _weights_mismatch(entry)
            if counts:
                yield ctx.report(cfg, f"a blend of {PER_SPLIT} has {counts[0]} prefixes but {counts[1]} weights; "
                                      "Megatron-Core asserts 'blend per split prefixes and weights must be equal in "
                                      "number' at job start", [PER_SPLIT])
                return
