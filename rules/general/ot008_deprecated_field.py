from __future__ import annotations

from mblint.rulekit import (
    Example,
    FixIntent,
    Rule,
    Severity,
    assigned,
    format_value,
    from_dotlist,
    has_check,
    hf_model,
    known,
    per_schema,
    schema_of,
)

# The deprecated train.* evaluation fields are copied onto validation.* verbatim by
# ConfigContainer.validate() (0.6.2 megatron/bridge/training/config.py:1517-1524), so renaming
# them keeps the behaviour exactly. Other renames change the value's type or meaning.
PLAIN_COPIES = {"train.eval_iters", "train.eval_interval", "train.skip_train"}

# Boolean switches that Megatron-Core turns into a cuda_graph_impl value
# (MCore 0.19.2 megatron/core/transformer/transformer_config.py:2365-2381): the fix removes
# the switch and sets the implementation it stood for.
IMPL_SWITCHES = {"model.enable_cuda_graph": "local", "model.external_cuda_graph": "transformer_engine"}


class DeprecatedField(Rule):
    id = "OT008"
    name = "deprecated-training-eval-fields"
    severity = Severity.WARNING
    other_severities = (Severity.ERROR,)
    summary = "A deprecated or removed field is set; use its replacement (e.g. train.eval_iters -> validation.eval_iters)."
    fixable = True
    tags = ("general", "deprecation")
    doc = """## What it does
Flags an assignment (recipe line, YAML key or command-line override) to a field that the
Megatron-Bridge release lists as deprecated or removed, with its replacement: in 0.6.x
`train.eval_iters`, `train.eval_interval`, `train.skip_train` (now `validation.*`),
`dataset.packed_sequence_specs` (now `dataset.offline_packing_specs` with
`enable_offline_packing`), `model.cuda_graph_scope`, `model.enable_cuda_graph`,
`model.external_cuda_graph`, `model.moe_router_topk_limited_devices`,
`model.hybrid_override_pattern`; in 0.3.x the Megatron-Core ones. The list comes from the
schema (`deprecated_fields`), not from this rule. Fields left at their defaults are not
reported, nor `model.cuda_graph_scope` while `model.cuda_graph_impl` is `"none"` (or unknown):
a release whose `validate()` clears the scope then (0.6.x: the schema check
`none_graph_impl_clears_scope`) never hands it to Megatron-Core, and in the others (0.5.x)
Megatron-Core moves it to `cuda_graph_modules`, which has no effect without CUDA graphs. A
`"full_iteration"` scope that is not cleared is still reported: Megatron-Core turns it into
`cuda_graph_impl = "full_iteration"`.

## Why it matters
Deprecated `train.*` evaluation fields are copied onto `validation.*` with a
DeprecationWarning in `ConfigContainer.validate()`, overwriting whatever the recipe set on
`validation.*`; they will be removed. A removed field (`dataset.packed_sequence_specs` in
0.6.x) is silently ignored in Python, skipped with a warning in YAML, and rejected by Hydra's
struct mode on the command line (ERROR there).

## Example
```python
cfg = _pretrain_common()
cfg.train.eval_iters = 10      # deprecated: use cfg.validation.eval_iters
```

## Fix
Rename to the replacement (`model.enable_cuda_graph = True` and `model.external_cuda_graph =
True` become `model.cuda_graph_impl = "local"` / `"transformer_engine"`, what Megatron-Core
turns them into). Safe for the `train.*` evaluation fields when the replacement is
not also set later in program order (Megatron-Bridge copies the value verbatim); unsafe for
the others (the replacement field has another type or meaning) and when the replacement is set
after the deprecated one.

## Versions
0.3.x and 0.6.x, each with its own list.

## Sources
0.6.2 megatron/bridge/utils/cuda_graph.py:134-139 and training/config.py:1258-1261 (scope
cleared when cuda_graph_impl is "none", before model.finalize()); MCore 0.18.2 (0.5.x)
megatron/core/transformer/transformer_config.py:939 (cuda_graph_modules "has no effect when
cuda_graph_impl="none""), :2159-2214 (scope moved to cuda_graph_modules, deprecated values
migrated) and transformer/cuda_graph_config.py:10-13, 129-136 ("full_iteration" migrates to
cuda_graph_impl); 0.6.2 megatron/bridge/training/config.py:456-465 (deprecated TrainingConfig fields),
:1517-1524 (copied to ValidationConfig with a DeprecationWarning); MCore 0.19.2
megatron/core/transformer/transformer_config.py:2358-2389 (deprecated CUDA-graph and router
fields); 0.6.2 megatron/bridge/models/hybrid/hybrid_provider.py:187; mblint schema
`deprecated_fields` (each entry cites its source).
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.validation.eval_iters = 10",
        "cfg = _pretrain_common()\ncfg.train.eval_iters = None",
        # graphs off: validate() clears the scope before Megatron-Core could warn (perf recipes' pattern)
        "cfg = _pretrain_common()\n"
        + hf_model() +
        "cfg.model.cuda_graph_impl = 'none'\ncfg.model.cuda_graph_scope = ['attn']",
        # value unknown (assigned in a loop)
        "cfg = _pretrain_common()\nfor n in range(3):\n    cfg.train.eval_iters = n",
        Example("cfg = _pretrain_common()\ncfg.train.eval_iters = 10", version="0.3"),
    ]
    invalid = [
        # validate() copies train.eval_iters onto validation.eval_iters verbatim: a safe rename
        Example("cfg = _pretrain_common()\ncfg.train.eval_iters = 10  # error",
                message="train.eval_iters = 10 is deprecated; use validation.eval_iters (Megatron-Bridge copies it "
                        "onto validation.eval_iters with a DeprecationWarning",
                fixed="cfg = _pretrain_common()\ncfg.validation.eval_iters = 10  # error",
                unsafe=False),
        "cfg = _pretrain_common()\ncfg.train.skip_train = True  # error",
        Example("cfg = _pretrain_common()\n"
                + hf_model() +
                "cfg.model.cuda_graph_impl = 'transformer_engine'\ncfg.model.cuda_graph_scope = ['attn']  # error",
                message="model.cuda_graph_scope = ['attn'] is deprecated; use model.cuda_graph_modules",
                fixed="cfg = _pretrain_common()\n"
                      + hf_model() +
                      "cfg.model.cuda_graph_impl = 'transformer_engine'\ncfg.model.cuda_graph_modules = ['attn']  # error",
                unsafe=True),
        # the entry moves to a validation section; not when train would be left empty (train: null)
        Example("cfg = _pretrain_common()", yaml="train:\n  train_iters: 100\n  eval_interval: 50  # error\n",
                fixed_yaml="train:\n  train_iters: 100\nvalidation:\n  eval_interval: 50  # error\n",
                unsafe=False),
        Example("cfg = _pretrain_common()", yaml="train:\n  eval_interval: 50  # error\n",
                fixed_yaml="train:\n  eval_interval: 50  # error\n"),
        Example("cfg = _pretrain_common()", dotlist=("train.eval_iters=5",)),
        # Megatron-Core turns enable_cuda_graph = True into cuda_graph_impl = "local"
        Example("cfg = _pretrain_common()\n"
                + hf_model() +
                "cfg.model.enable_cuda_graph = True  # error", version="0.3",
                message="model.enable_cuda_graph = True is deprecated; use model.cuda_graph_impl",
                fixed="cfg = _pretrain_common()\n"
                      + hf_model() +
                      "cfg.model.cuda_graph_impl = 'local'  # error",
                unsafe=True),
    ]

    def check(self, cfg, ctx):
        schema = schema_of(cfg)
        for path, info in _deprecated_in_order(schema):
            if not assigned(cfg, path):
                continue
            value = cfg.value(path)
            if not known(value) or value is None:
                continue
            if path == "model.cuda_graph_scope" and _scope_without_effect(cfg, value):
                continue
            parent, _, leaf = path.rpartition(".")
            spec = schema.find_class(cfg.type_of(parent) or "")
            if spec is not None and leaf in spec.fields and spec.fields[leaf].default_kind == "value" \
                    and spec.fields[leaf].default == value and not isinstance(value, bool):
                continue
            if spec is not None and leaf in spec.fields and isinstance(value, bool) \
                    and spec.fields[leaf].default is value and value is False:
                continue
            replacement = info.get("replacement")
            removed = spec is not None and leaf not in spec.fields
            message = f"{path} = {format_value(value)} is {'removed' if removed else 'deprecated'}"
            if replacement:
                message += f"; use {replacement}"
            if path in PLAIN_COPIES and replacement:
                message += (f" (Megatron-Bridge copies it onto {replacement} with a DeprecationWarning, "
                            f"overwriting {replacement} = {format_value(cfg.value(replacement))})")
            elif removed:
                message += " (this release no longer reads it, so the setting has no effect)"
            severity = Severity.WARNING
            if removed and from_dotlist(cfg, path):
                severity = Severity.ERROR
                message += "; a command-line override of a missing key is rejected by Hydra's struct mode"
            fields = [path]
            fixes = []
            if replacement:
                origin = cfg.last_origin(path)
                repl_origin = cfg.last_origin(replacement) if assigned(cfg, replacement) else None
                later = repl_origin is not None and origin is not None and repl_origin.seq > origin.seq
                if later:
                    fields.append(replacement)
                fixes = _replacement_fixes(path, replacement, value, safe=path in PLAIN_COPIES and not later)
            yield ctx.report(cfg, message, fields, primary=path, severity=severity, fixes=fixes)


def _scope_without_effect(cfg, scope) -> bool:
    """With CUDA graphs off (cuda_graph_impl "none") the deprecated scope changes nothing: either
    Megatron-Bridge clears it before Megatron-Core reads it (0.6.x), or Megatron-Core moves it to
    cuda_graph_modules, which has no effect without graphs. The exception is a "full_iteration"
    scope that Megatron-Bridge does not clear: Megatron-Core turns it into cuda_graph_impl =
    "full_iteration". An unknown implementation may be "none": silence."""
    impl = cfg.value("model.cuda_graph_impl")
    if known(impl) and impl != "none":
        return False
    if has_check(cfg, "none_graph_impl_clears_scope"):
        return True
    return "full_iteration" not in _scope_names(scope)


def _scope_names(scope) -> set[str]:
    items = scope if isinstance(scope, (list, tuple)) else [scope]
    return {part for item in items if isinstance(item, str) for part in item.split(",")}


def _deprecated_in_order(schema) -> list[tuple[str, dict]]:
    memo = per_schema(schema)
    if "deprecated in order" not in memo:
        memo["deprecated in order"] = sorted(schema.deprecated_fields.items())
    return memo["deprecated in order"]


def _replacement_fixes(path: str, replacement: str, value, safe: bool) -> list[FixIntent]:
    if path not in IMPL_SWITCHES:
        return [FixIntent("rename", path, new_field=replacement, safe=safe,
                          description=f"rename {path} to {replacement}")]
    if value is not True:
        return []
    impl = IMPL_SWITCHES[path]
    return [FixIntent("rename", path, impl, new_field=replacement, safe=False,
                      description=f"replace {path} = True with {replacement} = {impl!r}")]
