from __future__ import annotations

from mblint.rulekit import Example, FixIntent, Rule, Severity, dataset_is, value

SEMANTIC_KWARGS = ("add_bos", "add_eos", "add_sep", "answer_only_loss", "chat", "chat_loss_mode", "label_key",
                   "prompt_completion_config", "prompt_template", "truncation_field", "truncation_method",
                   "use_hf_tokenizer_chat_template")


class SftDatasetKwargsHygiene(Rule):
    id = "PK016"
    name = "sft-dataset-kwargs-hygiene"
    severity = Severity.ERROR
    other_severities = (Severity.WARNING,)
    summary = "GPTSFTDatasetConfig.dataset_kwargs must not hold max_num_samples or preprocessing keys."
    fixable = True
    tags = ("dataset",)
    requires = ("field:preprocessing",)
    doc = """## What it does
For `GPTSFTDatasetConfig`, flags `dataset.dataset_kwargs` keys that `validate()` rejects:
`max_num_samples` (error), and the deprecated preprocessing keys (`add_bos`, `chat`,
`prompt_template`, `answer_only_loss`, ...) together with an explicit `dataset.preprocessing`
(error); the deprecated keys alone are a warning.

## Why it matters
`GPTSFTDatasetConfig.validate()` raises "Set max_train_samples directly; dataset_kwargs must not
contain max_num_samples." and "Do not combine explicit preprocessing with deprecated semantic
dataset_kwargs: ..." at job start; the keys alone only emit a DeprecationWarning.

## Example
```python
cfg = _sft_common()                          # preprocessing is set by the SQuAD builder
cfg.dataset.dataset_kwargs["prompt_template"] = "{input} {output}"
```

## Fix
Move `max_num_samples` to `dataset.max_train_samples` (safe); express prompt and chat settings
through `dataset.preprocessing` (no automatic fix).

## Versions
0.6.x (0.3.x passes `dataset_kwargs` through).

## Sources
0.6.2 megatron/bridge/data/builders/gpt_sft.py:58-71 and 210-226.
"""
    valid = [
        "cfg = _sft_common()",
        "cfg = _sft_common()\ncfg.dataset.max_train_samples = 1000",
        "cfg = _sft_common()\nfor k in ('a', 'chat'):\n    cfg.dataset.dataset_kwargs[k] = True",
    ]
    invalid = [
        # moved to max_train_samples, the train split's max_num_samples (gpt_sft.py:760): safe
        Example("cfg = _sft_common()\ncfg.dataset.dataset_kwargs['max_num_samples'] = 1000  # error",
                message="set dataset.max_train_samples instead", unsafe=False,
                fixed="cfg = _sft_common()\ncfg.dataset.max_train_samples = 1000"),
        "cfg = _sft_common()\ncfg.dataset.dataset_kwargs['prompt_template'] = '{input} {output}'  # error",
        "cfg = _sft_common()\ncfg.dataset.preprocessing = None\ncfg.dataset.dataset_kwargs['chat'] = True  # error",
    ]

    def check(self, cfg, ctx):
        if dataset_is(cfg, "GPTSFTDatasetConfig") is not True:
            return
        base = "dataset.dataset_kwargs"
        limit = value(cfg, f"{base}.max_num_samples")
        if cfg.get(f"{base}.max_num_samples") is not None:
            fixes = [FixIntent("remove", f"{base}.max_num_samples", description="remove max_num_samples")]
            if isinstance(limit, int):
                fixes.append(FixIntent("set", "dataset.max_train_samples", limit,
                                       description=f"set dataset.max_train_samples to {limit}"))
            yield ctx.report(cfg, f"{base} contains max_num_samples, but GPTSFTDatasetConfig rejects it; "
                                  "set dataset.max_train_samples instead",
                             [f"{base}.max_num_samples"], fixes=fixes)
        present = [key for key in SEMANTIC_KWARGS if cfg.get(f"{base}.{key}") is not None]
        if not present:
            return
        fields = [f"{base}.{key}" for key in present]
        preprocessing = cfg.type_of("dataset.preprocessing")
        current = cfg.value("dataset.preprocessing")
        keys = ", ".join(present)
        if preprocessing is not None:
            yield ctx.report(cfg, f"{base} contains deprecated preprocessing keys ({keys}), but dataset.preprocessing "
                                  f"is set ({preprocessing}); GPTSFTDatasetConfig rejects the combination", fields)
        elif current is None:
            yield ctx.report(cfg, f"{base} contains deprecated preprocessing keys ({keys}); use dataset.preprocessing "
                                  "(ChatSFTPreprocessingConfig or PromptCompletionSFTPreprocessingConfig)",
                             fields, severity=Severity.WARNING)

