from __future__ import annotations

from mblint.rulekit import ABSENT, UNKNOWN, Example, Rule, Severity, dataset_is, has_overrides, is_node, is_number, known, value

P = "cfg = _sft_common()\n"  # an HF-backed GPTSFTDatasetConfig (SQuAD) with hf_validation_proportion = 0.1
ROOT = "dataset.dataset_root"
HF = "dataset.hf_dataset"
HF_ONLY = ("dataset.hf_validation_dataset", "dataset.hf_test_dataset", "dataset.hf_output_root",
           "dataset.hf_validation_proportion")
REWRITE = "dataset.hf_rewrite"
PROPORTION = "dataset.hf_validation_proportion"
VALIDATION = "dataset.hf_validation_dataset"
OUTPUT_ROOT = "dataset.hf_output_root"
PACKED_PATHS = tuple(f"dataset.offline_packing_specs.{name}"
                     for name in ("packed_train_data_path", "packed_val_data_path", "packed_metadata_path"))


def _is_set(cfg, path):
    """True when the field holds a value or an object, False when None, UNKNOWN otherwise."""
    if cfg.type_of(path) is not None:
        return True
    current = cfg.value(path)
    if current is None or current is ABSENT:
        return False
    if is_node(current) or not known(current):
        return UNKNOWN
    return True


def _blank(raw) -> bool:
    return known(raw) and isinstance(raw, str) and not raw.strip()


class SftDataSource(Rule):
    id = "OT017"
    name = "sft-data-source"
    severity = Severity.ERROR
    summary = ("A text SFT dataset (GPTSFTDatasetConfig) takes exactly one source, dataset_root or hf_dataset, and "
               "Hugging Face split settings only with hf_dataset.")
    tags = ("general", "dataset")
    doc = """## What it does
On a `GPTSFTDatasetConfig` dataset (0.6.x text SFT), flags
- `dataset.dataset_root` and `dataset.hf_dataset` both set, or both None once an override file
  or a command line was applied (a recipe alone may leave the source to its launch line, as
  OT003 does for the pretrained checkpoint);
- `dataset.dataset_root` an empty path;
- `dataset.dataset_root` with a Hugging Face split or materialization setting
  (`hf_validation_dataset`, `hf_test_dataset`, `hf_output_root`, `hf_validation_proportion`,
  `hf_rewrite`);
- `dataset.hf_output_root` an empty path, `dataset.hf_validation_proportion` outside (0, 1), or
  both `hf_validation_dataset` and `hf_validation_proportion` set;
- `dataset.hf_rewrite` with an explicit packed data path in `offline_packing_specs`.

## Why it matters
`GPTSFTDatasetConfig.validate()`, run by `ConfigContainer.validate()` through the dataset's
`finalize()`, raises at job start: "Exactly one text-only SFT source must be set: dataset_root
or hf_dataset.", "dataset_root must be a non-empty path.", "Hugging Face split and
materialization settings require hf_dataset, not dataset_root.", "hf_output_root must be a
non-empty path when set.", "hf_validation_proportion must be between 0 and 1.", "Set either
hf_validation_dataset or hf_validation_proportion, not both." and "hf_rewrite cannot safely
replace explicit packed data paths; use builder-managed packed paths.". Pointing a shipped SFT
recipe (built on a Hugging Face data set, with a validation proportion) at local data with
`dataset.dataset_root=...` alone trips the first, and clearing `hf_dataset` too trips the third.

## Example
```python
cfg = llama3_8b_sft_config()          # hf_dataset = SQuAD, hf_validation_proportion = 0.1
cfg.dataset.dataset_root = "/data/my_sft"
```

## Fix
For local data: `dataset.dataset_root = ...`, `dataset.hf_dataset = None` and the Hugging Face
split settings back to None (`hf_validation_proportion = None`...). No automatic fix: which
source was meant is the author's choice.

## Versions
0.6.x (`GPTSFTDatasetConfig` and its sources arrived in 0.6.0).

## Sources
0.6.2 megatron/bridge/data/builders/gpt_sft.py:134-167, 197-209 (`validate`); 0.6.2
megatron/bridge/recipes/utils/dataset_utils.py:78-110 (the recipes' HF-backed config). Oracle
(0.6.2, `llama3_8b_sft_config`): `dataset.dataset_root=/data/x` fails with "Exactly one text-only SFT
source must be set: dataset_root or hf_dataset."; with `dataset.hf_dataset=None` too, "Hugging Face
split and materialization settings require hf_dataset, not dataset_root."; `dataset.hf_dataset=None`
alone the first message; `dataset.dataset_root=' '` "dataset_root must be a non-empty path.";
`dataset.hf_validation_proportion=1.5` "hf_validation_proportion must be between 0 and 1.";
`dataset.hf_output_root=''` "hf_output_root must be a non-empty path when set."; `dataset.hf_rewrite=True
dataset.offline_packing_specs.packed_train_data_path=/p/t.npy` "hf_rewrite cannot safely replace explicit
packed data paths; use builder-managed packed paths." (`hf_rewrite=True` alone is accepted).
"""
    valid = [
        P,
        P + "cfg.dataset.hf_dataset = None\ncfg.dataset.hf_validation_proportion = None\n"
        "cfg.dataset.dataset_root = '/data/my_sft'",
        P + "cfg.dataset.hf_validation_proportion = 0.05",
        P + "for root in (None, '/data/x'):\n    cfg.dataset.dataset_root = root",
        # no source in the recipe alone: the launch line gives it
        P + "cfg.dataset.hf_dataset = None\ncfg.dataset.hf_validation_proportion = None",
        Example("cfg = _sft_common()", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.dataset.dataset_root = '/data/my_sft'  # error",
                message="Exactly one text-only SFT source must be set: dataset_root or hf_dataset."),
        Example(P + "cfg.dataset.hf_dataset = None\ncfg.dataset.dataset_root = '/data/my_sft'  # error",
                message="require hf_dataset, not dataset_root"),
        Example(P + "cfg.dataset.hf_dataset = None", dotlist=("train.train_iters=10",)),
        Example(P + "cfg.dataset.hf_validation_proportion = 10  # error",
                message="hf_validation_proportion must be between 0 and 1."),
        Example(P + "cfg.dataset.hf_output_root = ''  # error", message="hf_output_root must be a non-empty path"),
        Example(P + "cfg.dataset.hf_dataset = None\ncfg.dataset.hf_validation_proportion = None\n"
                "cfg.dataset.dataset_root = ''  # error", message="dataset_root must be a non-empty path."),
        Example(P + "cfg.dataset.offline_packing_specs.packed_train_data_path = '/packed/train.npy'\n"
                "cfg.dataset.hf_rewrite = True  # error", message="hf_rewrite cannot safely replace explicit packed"),
        # modelled on a shipped SFT recipe pointed at local data on the launch line
        Example(P, dotlist=("dataset.dataset_root=/data/my_sft",)),
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, "GPTSFTDatasetConfig") is not True:
            return
        local, hub = _is_set(cfg, ROOT), _is_set(cfg, HF)
        if not known(local) or not known(hub):
            return
        if local == hub and (local or has_overrides(cfg)):
            state = "both set" if local else "both None"
            yield ctx.report(cfg, f"{ROOT} and {HF} are {state}; GPTSFTDatasetConfig.validate() raises 'Exactly one "
                                  "text-only SFT source must be set: dataset_root or hf_dataset.' at job start",
                             [ROOT, HF])
            return
        if local and not hub:
            yield from self._local(cfg, ctx)
        elif hub and not local:
            yield from self._hub(cfg, ctx)

    @staticmethod
    def _local(cfg, ctx):
        if _blank(cfg.value(ROOT)):
            yield ctx.report(cfg, f"{ROOT} is an empty path; GPTSFTDatasetConfig.validate() raises 'dataset_root "
                                  "must be a non-empty path.' at job start", [ROOT])
            return
        hub_only = [path for path in HF_ONLY if _is_set(cfg, path) is True]
        if value(cfg, REWRITE, False) is True:
            hub_only.append(REWRITE)
        if hub_only:
            shown = ", ".join(f"{path} = {cfg.value(path)!r}" if cfg.type_of(path) is None else path
                              for path in hub_only)
            yield ctx.report(cfg, f"{ROOT} is set (local data) together with Hugging Face settings ({shown}); "
                                  "GPTSFTDatasetConfig.validate() raises 'Hugging Face split and materialization "
                                  "settings require hf_dataset, not dataset_root.' at job start; set them to None",
                             [ROOT, *hub_only], primary=ROOT)

    @staticmethod
    def _hub(cfg, ctx):
        if _blank(cfg.value(OUTPUT_ROOT)):
            yield ctx.report(cfg, f"{OUTPUT_ROOT} is an empty path; GPTSFTDatasetConfig.validate() raises "
                                  "'hf_output_root must be a non-empty path when set.' at job start", [OUTPUT_ROOT])
        proportion = value(cfg, PROPORTION, None)
        if is_number(proportion) and not 0.0 < proportion < 1.0:
            yield ctx.report(cfg, f"{PROPORTION} is {proportion}; GPTSFTDatasetConfig.validate() raises "
                                  "'hf_validation_proportion must be between 0 and 1.' at job start (a fraction, "
                                  "not a percentage)", [PROPORTION])
        elif proportion is not None and known(proportion) and _is_set(cfg, VALIDATION) is True:
            yield ctx.report(cfg, f"{VALIDATION} and {PROPORTION} are both set; GPTSFTDatasetConfig.validate() "
                                  "raises 'Set either hf_validation_dataset or hf_validation_proportion, not both.' "
                                  "at job start", [VALIDATION, PROPORTION])
        if value(cfg, REWRITE, False) is True:
            explicit = [path for path in PACKED_PATHS if _is_set(cfg, path) is True]
            if explicit:
                yield ctx.report(cfg, f"{REWRITE} is True with an explicit packed data path ({', '.join(explicit)}); "
                                      "GPTSFTDatasetConfig.validate() raises 'hf_rewrite cannot safely replace "
                                      "explicit packed data paths; use builder-managed packed paths.' at job start",
                                 [REWRITE, *explicit])
