from __future__ import annotations

import functools

from mblint.rulekit import (ABSENT, HF_PROVIDER_LABEL, Example, FixIntent, Rule, Severity, format_value, hf_model,
                             known, per_schema, schema_of, suggest)

TRANSFORMER_CONFIG = "megatron.core.transformer.transformer_config.TransformerConfig"

# Factory parameter names that people write onto the scheduler although the factory maps them
# to the optimizer: 0.6.2 megatron/bridge/recipes/utils/optimizer_utils.py:100-166
# (distributed_fused_adam_with_cosine_annealing(max_lr=..., min_lr=...) sets optimizer.lr and
# optimizer.min_lr); 0.3.1 the same file.
KNOWN_ALIASES = {
    ("scheduler", "max_lr"): "optimizer.lr",
    ("scheduler", "min_lr"): "optimizer.min_lr",
    ("scheduler", "lr"): "optimizer.lr",
    ("optimizer", "max_lr"): "optimizer.lr",
    # the performance scripts' --moe_a2a_overlap turns on expert-parallel A2A overlap
    # (scripts/performance/utils/overrides.py _set_moe_a2a_overlap_overrides)
    ("model", "moe_a2a_overlap"): "model.overlap_moe_expert_parallel_comm",
}


# Attributes that are valid although they are no dataclass fields, which the schema does not
# record yet (reported to the schema owners): a property with a setter, or an attribute set
# in a custom __init__ from one of its parameters.
#   0.3.1 megatron/bridge/training/config.py:408-445 (GPTDatasetConfig.__init__ stores
#     skip_getting_attention_mask_from_dataset; `seq_length` is a property aliasing
#     sequence_length with a setter)
#   0.6.2 megatron/bridge/training/config.py:249-266 (GPTDatasetConfig.__init__ stores
#     skip_getting_attention_mask_from_dataset)
NON_FIELD_ATTRIBUTES = {
    "GPTDatasetConfig": {"skip_getting_attention_mask_from_dataset", "seq_length"},
}


def provider_fields(schema) -> frozenset[str]:
    """Every field of every model provider class the schema knows (all derive from
    Megatron-Core's TransformerConfig), and the attributes Megatron-Bridge's own code sets on
    or reads from providers (schema fact ``provider_attributes``, e.g. fields of a newer
    Megatron-Core that a model bridge fills in): a name outside it is used by no provider."""
    memo = per_schema(schema)
    if "provider fields" not in memo:
        fields = {name for qualname, spec in schema.classes.items() if schema.is_subclass(qualname, TRANSFORMER_CONFIG)
                  for name in spec.field_names()}
        attributes = schema.facts.get("provider_attributes", ())
        memo["provider fields"] = frozenset(fields.union(attributes))
    return memo["provider fields"]


def field_choices(schema, spec) -> tuple[str, ...]:
    """The names a suggestion picks from, sorted: the fields of the class ``spec``, or
    ``provider_fields`` (``spec`` is then that frozenset). Kept per schema: every finding asks."""
    memo = per_schema(schema)
    key = ("field choices", "provider fields" if isinstance(spec, frozenset) else spec.qualname)
    if key not in memo:
        memo[key] = tuple(sorted(spec if isinstance(spec, frozenset) else spec.fields))
    return memo[key]


def hf_provider_extra_fields(cfg, schema) -> list[str]:
    """Keys set on the AutoBridge-derived providers (class not known) that no provider class has."""
    found = []
    for node, type_name in cfg.child_types("").items():
        if type_name == HF_PROVIDER_LABEL:
            found += [f"{node}.{leaf}" for leaf in cfg.keys_outside(node, provider_fields(schema))
                      if not leaf.startswith("_")]
    return found


HF_MODEL = hf_model()


class UnknownField(Rule):
    id = "OT001"
    name = "unknown-field"
    severity = Severity.WARNING
    other_severities = (Severity.ERROR,)
    summary = "A field that the target config class does not have: dead in Python/YAML, an error on the command line."
    fixable = True
    tags = ("general", "overrides")
    doc = """## What it does
Flags a field path whose last part is not a field of its parent's config class, such as
`cfg.scheduler.max_lr = 3e-4` (SchedulerConfig has no `max_lr`; the learning rate lives on
`optimizer.lr`), `cfg.model.moe_a2a_overlap = True`, or a YAML key `optimizer.finetune_lr`.
A model provider derived from a Hugging Face config (`AutoBridge.from_hf_pretrained(...)`,
its class known only at run time) is checked against the union of the fields of every
provider class the release has (all derive from Megatron-Core's `TransformerConfig`) and the
attributes Megatron-Bridge's own code sets on or reads from providers (schema fact
`provider_attributes`): a name outside both is a field of no provider. Dict-valued nodes
(`dataset.dataset_kwargs`, `env_vars`), classes the schema does not know, private attributes
(`_name`) and deprecated fields (see OT008) are skipped.
The message suggests the nearest field of the same class, or a field of the same name (or a
close one) on another sub-config; never a flag (a `bool` field) for a value no flag takes
(`optimizer.finetune_lr: 0.0001` is not `checkpoint.finetune`).

## Why it matters
Megatron-Bridge's config dataclasses accept any attribute assignment, so a misspelt Python
assignment is silently dead; an unknown YAML key is logged as a warning and skipped
(`_apply_overrides`). On the command line, `scripts/training/run_recipe.py` applies
`key=value` overrides in Hydra struct mode, which rejects a key that does not exist:
"Could not override 'optimizer.finetune_lr'. To append to your config use
+optimizer.finetune_lr=3" (confirmed with Megatron-Bridge 0.6.2). Hence WARNING for Python
and YAML, ERROR for a command-line override. A model from `AutoBridge` (its provider class known
only at run time, or from the model's config.json) gets the same verdict either way: a key no
provider class has is missing from whichever class the run builds.

## Example
```python
cfg = _pretrain_common()
cfg.scheduler.max_lr = 3e-4   # dead: SchedulerConfig has no max_lr; did you mean optimizer.lr?
```

## Fix
Rename the field to the suggestion. Unsafe: the renamed assignment starts to take effect
and changes training (learning rate, parallelism...), so review the value.

## Versions
0.3.x and 0.6.x (field lists come from each line's schema).

## Sources
0.6.2 megatron/bridge/training/utils/omegaconf_utils.py:163-186 (Hydra overrides in struct
mode), :454-521 (`_apply_overrides`: unknown keys warned and skipped); 0.6.2
megatron/bridge/recipes/utils/optimizer_utils.py:100-166 (max_lr/min_lr map to optimizer.lr
and optimizer.min_lr); MCore 0.19.2 megatron/training/config/training_config.py (SchedulerConfig
fields); the Megatron-Bridge 0.6.2 oracle for the struct error.
"""
    valid = [
        "cfg = _pretrain_common()\ncfg.optimizer.lr = 3e-4\ncfg.scheduler.lr_warmup_iters = 10",
        "cfg = _sft_common()\ncfg.env_vars = {'ANY_NAME': '1'}\ncfg.dataset.dataset_kwargs = {'x': 1}",
        # HF-derived provider: a field of some provider class (Qwen3-VL's), or an attribute a model
        # bridge fills in for a newer Megatron-Core (DeepSeek-V4's compression ratios)
        "cfg = _pretrain_common()\n" + HF_MODEL + "cfg.model.vision_cuda_graph_scope = ['attn']\n"
        "cfg.model.csa_compress_ratios = [4, 128]",
        Example("cfg = _pretrain_common()\ncfg.train.eval_iters = 3", version="0.3"),
        Example("cfg = _pretrain_common()", dotlist=("optimizer.lr=1e-4",)),
        Example("cfg = _pretrain_common()", yaml="optimizer:\n  lr: 0.0001\n"),
    ]
    invalid = [
        # max_lr is the optimizer's peak learning rate, optimizer.lr
        Example("cfg = _pretrain_common()\ncfg.scheduler.max_lr = 3e-4  # error",
                message="scheduler.max_lr = 0.0003: SchedulerConfig has no field 'max_lr'; the assignment is "
                        "accepted and silently has no effect; did you mean optimizer.lr?",
                fixed="cfg = _pretrain_common()\ncfg.optimizer.lr = 3e-4  # error",
                unsafe=True),
        Example("cfg = _pretrain_common()\ncfg.train.micro_batchsize = 2  # error",
                message="did you mean train.micro_batch_size?",
                fixed="cfg = _pretrain_common()\ncfg.train.micro_batch_size = 2  # error",
                unsafe=True),
        Example("cfg = _pretrain_common()", yaml="train:\n  micro_batchsize: 2  # error\n",
                message="Megatron-Bridge warns and skips this override key; did you mean train.micro_batch_size?",
                fixed_yaml="train:\n  micro_batch_size: 2  # error\n",
                unsafe=True),
        Example("cfg = _pretrain_common()\ncfg.optimizer.learning_rate = 1e-4  # error", version="0.3"),
        Example("cfg = _pretrain_common()", yaml="optimizer:\n  finetune_lr: 0.0001  # error\n"),
        # checkpoint.finetune is a flag: no rename of a learning rate to it
        Example("cfg = _pretrain_common()", yaml="optimizer:\n  lr: 0.0003\n  finetune_lr: 0.0001  # error\n",
                message="optimizer.finetune_lr: OptimizerConfig has no field 'finetune_lr'; Megatron-Bridge warns and "
                        "skips this override key",
                fixed_yaml="optimizer:\n  lr: 0.0003\n  finetune_lr: 0.0001  # error\n"),
        Example("cfg = _pretrain_common()", dotlist=("optimizer.finetune_lr=3",)),
        # the model's class known only at run time: still rejected by Hydra's struct mode
        Example("cfg = _pretrain_common()\n" + HF_MODEL, dotlist=("model.num_layrs=2",),
                message="a command-line key=value override of a missing key is rejected by Hydra's struct mode"),
        # a field of no provider class, on a model from AutoBridge (the Qwen3 MoE recipes' dead line);
        # moe_a2a_overlap is the performance scripts' name for the expert-parallel A2A overlap
        Example("cfg = _pretrain_common()\n" + HF_MODEL + "cfg.model.moe_a2a_overlap = False  # error",
                message="no model provider class of this release has a field 'moe_a2a_overlap'; the assignment is "
                        "accepted and silently has no effect; did you mean model.overlap_moe_expert_parallel_comm?",
                fixed="cfg = _pretrain_common()\n" + HF_MODEL + "cfg.model.overlap_moe_expert_parallel_comm = False  # error",
                unsafe=True),
    ]

    def check(self, cfg, ctx):
        schema = schema_of(cfg)
        deprecated = set(schema.deprecated_fields)
        reported: list[str] = []
        for path in sorted(cfg.extra_fields()):
            parent, _, leaf = path.rpartition(".")
            if leaf.startswith("_") or path in deprecated:
                continue
            parent_type = cfg.type_of(parent)
            if parent_type is None or parent_type == "dict":
                continue
            spec = schema.find_class(parent_type)
            if spec is None or leaf in spec.fields or leaf in NON_FIELD_ATTRIBUTES.get(parent_type, ()):
                continue
            origin = cfg.last_origin(path)
            if origin is None or origin.kind not in ("set", "override"):
                continue
            reported.append(path)
            yield self.finding(cfg, ctx, schema, path, parent_type, spec, origin, "assign")
        for path in hf_provider_extra_fields(cfg, schema):
            origin = cfg.last_origin(path)
            if origin is None or origin.kind not in ("set", "override") or path in deprecated:
                continue
            reported.append(path)
            action = next((action for applied, where, action, _ in cfg.applied_overrides
                           if applied == path and where == origin), "assign")
            yield self.finding(cfg, ctx, schema, path, HF_PROVIDER_LABEL, provider_fields(schema), origin, action)
        for path, origin, action, written in cfg.ignored_overrides:
            parent, _, leaf = path.rpartition(".")
            parent_type = cfg.type_of(parent)
            spec = schema.find_class(parent_type or "")
            if spec is None or path in reported or leaf in NON_FIELD_ATTRIBUTES.get(parent_type, ()):
                continue
            reported.append(path)
            yield self.finding(cfg, ctx, schema, path, parent_type, spec, origin, action, written)

    def finding(self, cfg, ctx, schema, path, parent_type, spec, origin, action, written=ABSENT):
        parent, _, leaf = path.rpartition(".")
        suggestion = self.suggest(cfg, schema, parent, leaf, field_choices(schema, spec))
        value = cfg.value(path)
        if suggestion and not _could_hold(cfg, schema, suggestion, value if written is ABSENT else written):
            suggestion = None  # a flag for a number or a name (optimizer.finetune_lr -> checkpoint.finetune)
        is_leaf = cfg.get(path) is not None
        shown = f" = {format_value(value)}" if is_leaf else ""
        message = f"{path}{shown}: {parent_type} has no field '{leaf}'"
        if parent_type == HF_PROVIDER_LABEL:
            message = f"{path}{shown}: no model provider class of this release has a field '{leaf}'"
        # Hydra struct mode rejects a plain `key=value` for a missing key; `+key`/`++key` are
        # accepted and then skipped by Megatron-Bridge's apply_overrides (omegaconf_utils.py).
        rejected = origin.kind == "override" and cfg.from_command_line(origin) and action == "set"
        if rejected:
            message += (" — a command-line key=value override of a missing key is rejected by Hydra's "
                        "struct mode (\"Could not override\")")
        elif origin.kind == "override":
            message += "; Megatron-Bridge warns and skips this override key"
        else:
            message += "; the assignment is accepted and silently has no effect"
        fixes = []
        if suggestion:
            message += f"; did you mean {suggestion}?"
            fixes = [FixIntent("rename", path, new_field=suggestion, safe=False,
                               description=f"rename {path} to {suggestion}")]
        if (is_leaf or cfg.origins(path)) and not rejected:
            return ctx.report(cfg, message, [path], primary=path,
                              severity=Severity.ERROR if rejected else Severity.WARNING, fixes=fixes)
        return ctx.report(cfg, message, [path], location=origin,
                          severity=Severity.ERROR if rejected else Severity.WARNING, fixes=fixes)

    @staticmethod
    def suggest(cfg, schema, parent: str, leaf: str, own_fields: list[str]) -> str | None:
        top = parent.split(".")[0] if parent else ""
        alias = KNOWN_ALIASES.get((top, leaf)) if parent == top else None
        if alias:
            return alias
        close = _closest(leaf, tuple(own_fields), 0.75)
        if close:
            return f"{parent}.{close}" if parent else close
        # the same field (or a close one) on another top-level sub-config
        siblings = []
        for node in sorted({key for key in cfg.keys("") if key and "." not in key and key != top}):
            spec = schema.find_class(cfg.type_of(node) or "")
            if spec is not None and cfg.type_of(node) != "dict":
                siblings.append((node, field_choices(schema, spec)))
        found = _on_sibling(leaf, tuple(siblings))
        if found:
            return found
        close = _closest(leaf, tuple(own_fields), 0.6)
        if close:
            return f"{parent}.{close}" if parent else close
        return None



def _could_hold(cfg, schema, target: str, written) -> bool:
    """False when ``target`` is a bool field and ``written`` a known value no flag takes (a
    float, a string, an int other than 0 and 1): renaming to it would be a type error."""
    parent, _, leaf = target.rpartition(".")
    spec = schema.find_class(cfg.type_of(parent) or "")
    field = spec.fields.get(leaf) if spec is not None else None
    if field is None or field.annotation not in ("bool", "bool | None", "Optional[bool]"):
        return True
    if not known(written) or written is None or isinstance(written, bool):
        return True
    return isinstance(written, int) and written in (0, 1)

# The same misspelt field turns up in many configurations (recipes share base builders):
# difflib's answers, which depend only on their arguments, are kept.
@functools.lru_cache(maxsize=1024)
def _closest(word: str, choices: tuple[str, ...], cutoff: float) -> str | None:
    return suggest(word, choices, cutoff)


@functools.lru_cache(maxsize=1024)
def _on_sibling(leaf: str, siblings: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    """``node.leaf`` for the first sibling node that has the field, else the closest match."""
    for node, names in siblings:
        if leaf in names:
            return f"{node}.{leaf}"
    import difflib

    best = None
    for node, names in siblings:
        for name in difflib.get_close_matches(leaf, names, n=1, cutoff=0.8):
            score = difflib.SequenceMatcher(None, leaf, name).ratio()
            if best is None or score > best[0]:
                best = (score, f"{node}.{name}")
    return best[1] if best else None
