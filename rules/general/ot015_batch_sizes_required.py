from __future__ import annotations

from mblint.rulekit import Example, Rule, Severity, knows_field, value

P = "cfg = _pretrain_common()\n"
PAIRS = (("train.global_batch_size", "validation.eval_global_batch_size", "eval_global_batch_size"),
         ("train.micro_batch_size", "validation.eval_micro_batch_size", "eval_micro_batch_size"))


class BatchSizesRequired(Rule):
    id = "OT015"
    name = "batch-sizes-required"
    severity = Severity.ERROR
    summary = "train.global_batch_size and train.micro_batch_size must be set unless the evaluation batch sizes are."
    tags = ("general", "training")
    doc = """## What it does
Flags `train.global_batch_size` (or `train.micro_batch_size`) set to None while
`validation.eval_global_batch_size` (or `validation.eval_micro_batch_size`) is None too, in the
releases that have these evaluation fields (0.5.x and later).

## Why it matters
`ConfigContainer.validate()` takes the evaluation batch sizes from the training ones when they
are not given, and asserts "train.global_batch_size must be set when eval_global_batch_size is
not explicitly configured" / "train.micro_batch_size must be set when eval_micro_batch_size is not
explicitly configured" at job start. A `train.global_batch_size=null` override (to let another
tool fill it in) stops there.

## Example
```python
cfg.train.global_batch_size = None
```

## Fix
Give the batch size. No automatic fix: its value is the author's choice.

## Versions
0.5.x and 0.6.x (0.3.x and 0.4.x have no evaluation batch-size fields and no such check).

## Sources
0.6.2 megatron/bridge/training/config.py:1293-1302; 0.5.1 the same check. Oracle (0.6.2,
`llama3_8b_pretrain_config`): `train.global_batch_size=None` fails with "train.global_batch_size
must be set when eval_global_batch_size is not explicitly configured", `train.micro_batch_size=None`
with the micro-batch message.
"""
    valid = [
        P + "cfg.train.global_batch_size = None\ncfg.validation.eval_global_batch_size = 32",
        P + "for gbs in (None, 32):\n    cfg.train.global_batch_size = gbs",
        Example(P + "cfg.train.global_batch_size = 32", version="0.3"),
    ]
    invalid = [
        Example(P + "cfg.train.global_batch_size = None  # error",
                message="train.global_batch_size must be set when eval_global_batch_size is not explicitly configured"),
        Example(P + "cfg.train.micro_batch_size = None  # error",
                message="train.micro_batch_size must be set when eval_micro_batch_size is not explicitly configured"),
        # modelled on a launch line that leaves the batch size to be filled in
        Example(P, dotlist=("train.global_batch_size=null",)),
    ]

    def check(self, cfg, ctx):
        for train_path, eval_path, eval_field in PAIRS:
            if not knows_field(cfg, eval_field):
                continue
            if value(cfg, train_path) is None and value(cfg, eval_path) is None:
                name, eval_name = train_path.split(".")[1], eval_field
                yield ctx.report(cfg, f"{train_path} is None and {eval_path} is None; validate() asserts "
                                      f"'train.{name} must be set when {eval_name} is not explicitly configured' "
                                      "at job start", [train_path, eval_path], primary=train_path)
