"""Tiny rules used only by the fix tests, so they do not depend on the real rule pack."""

from __future__ import annotations

from mblint.findings import FixIntent, Severity
from mblint.rule import Rule, known

_DOC = "## What it does\nx\n## Why it matters\nx\n## Example\nx\n## Fix\nx\n## Versions\nx\n## Sources\nx\n"


def make_rule(rule_id: str, field: str, bad, good=None, action: str = "set", new_field: str | None = None,
              safe: bool = True, extra: tuple = ()) -> type[Rule]:
    """A rule that fires when ``field`` is ``bad`` (any known value when ``bad`` is ...) and
    proposes ``action``; ``extra`` adds more (field, value) set intents to the same fix."""

    class TestRule(Rule):
        id = rule_id
        name = f"test-{rule_id.lower()}"
        severity = Severity.WARNING
        summary = "test rule"
        doc = _DOC
        fixable = True

        def check(self, cfg, ctx):
            value = cfg.value(field)
            if not known(value) or (bad is not ... and value != bad):
                return
            origins = cfg.origins(field)
            if action in ("rename", "remove") and (not origins or origins[-1].kind == "default"):
                return
            fixes = [FixIntent(action, field, good, new_field=new_field, safe=safe,
                               description=f"{action} {field}")]
            fixes += [FixIntent("set", f, v, safe=safe, description=f"set {f} to {v!r}") for f, v in extra]
            yield ctx.report(cfg, f"{field} is {value!r}", [field], primary=field, fixes=fixes)

    TestRule.__name__ = f"Rule{rule_id}"
    return TestRule


def _unknown_key_rule() -> type[Rule]:
    class UnknownKey(Rule):
        id = "TS007"
        name = "test-unknown-key"
        severity = Severity.WARNING
        summary = "test rule"
        doc = _DOC
        fixable = True

        def check(self, cfg, ctx):
            for path, origin, _action, _value in cfg.ignored_overrides:
                if path == "train.micro_batch_szie":
                    fix = FixIntent("rename", path, new_field="train.micro_batch_size", safe=False,
                                    description="rename to train.micro_batch_size")
                    finding = ctx.report(cfg, f"unknown key {path}", [], fixes=[fix])
                    finding.location = origin
                    finding.fields = (path,)
                    yield finding

    return UnknownKey


def _pk001():
    from mblint_rules.packing.pk001_offline_packing_mbs import OfflinePackingRequiresMbs1

    return OfflinePackingRequiresMbs1


class _Rules(dict):
    """The test rules by id; any other id is a rule of the built-in pack."""

    def __missing__(self, rule_id: str):
        from mblint.plugins import load_plugins

        for rule in load_plugins().rules:
            if rule.id == rule_id:
                return lambda: rule
        raise KeyError(rule_id)


RULES = _Rules({
    "PK001": _pk001,
    "TS001": lambda: make_rule("TS001", "dataset.seq_length", 4096, 2048),
    "TS002": lambda: make_rule("TS002", "dataset.offline_packing_specs.pad_seq_to_mult", 1, 16),
    "TS003": lambda: make_rule("TS003", "dataset.dataset_kwargs.pad_to_max_length", False, True),
    "TS004": lambda: make_rule("TS004", "train.eval_iters", ..., action="rename", new_field="validation.eval_iters"),
    "TS005": lambda: make_rule("TS005", "train.manual_gc_interval", 7, action="remove"),
    "TS006": lambda: make_rule("TS006", "train.manual_gc_interval", 100, 50),
    "TS009": lambda: make_rule("TS009", "checkpoint.ckpt_format", "torch", "torch_dist"),
    "TS007": lambda: _unknown_key_rule(),
    "TS008": lambda: make_rule("TS008", "train.global_batch_size", 128, 64),
})


def _halving_rule() -> type[Rule]:
    """TS010: Megatron-Bridge's proposal for packed micro-batches (MBS 1, the global batch divided
    by the old MBS): a fix whose values depend on the configuration it is planned for."""

    class Halving(Rule):
        id = "TS010"
        name = "test-halving"
        severity = Severity.WARNING
        summary = "test rule"
        doc = _DOC
        fixable = True

        def check(self, cfg, ctx):
            mbs, gbs = cfg.value("train.micro_batch_size"), cfg.value("train.global_batch_size")
            if not known(mbs, gbs) or not isinstance(mbs, int) or mbs <= 1:
                return
            fixes = [FixIntent("set", "train.micro_batch_size", 1, safe=False, description="set mbs to 1"),
                     FixIntent("set", "train.global_batch_size", gbs // mbs, safe=False,
                               description=f"set gbs to {gbs // mbs}")]
            yield ctx.report(cfg, f"train.micro_batch_size is {mbs}", ["train.micro_batch_size"],
                             primary="train.micro_batch_size", fixes=fixes)

    return Halving


RULES["TS010"] = _halving_rule
