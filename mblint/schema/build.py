"""A schema (the JSON form ``mblint.schema`` loads) from Megatron-Bridge and Megatron-Core
sources, read with ``ast`` only. Used by ``scripts/generate_schema.py`` for the bundled
releases and by ``mblint.schema.derive`` for the source at hand."""

from __future__ import annotations

import json

from mblint.paths import read_regular
from mblint.schema.extract import MAX_MODULE_BYTES, SourceIndex, extract_classes, extract_enums
from mblint.schema.runtime_facts import collate_pad_multiple, flex_backend_gpus
from mblint.schema.self_preserving import self_preserving_methods
from mblint.schema.facts import (
    allowed_values,
    bridge_used_values,
    deprecated_fields,
    factories,
    graph_name_deprecations,
    source_checks,
    hf_derived,
    hf_provider,
    hf_provider_classes,
    init_aliases,
    mixed_precision_lookup,
    mixed_precision_recipes,
    provider_attributes,
    constructor_facts,
)

FORMAT = 2
CONFIG_CONTAINER = "megatron.bridge.training.config.ConfigContainer"
TRANSFORMER_CONFIG = "megatron.core.transformer.transformer_config.TransformerConfig"
# Runtime-only parts of the packages that no configuration refers to.
EXCLUDED_PACKAGES = ("inference", "diffusion", "resharding", "dist_checkpointing", "export", "fault_injector")
HF_FACTORY_METHODS = ("from_hf_pretrained", "from_hf_config")
HF_PROVIDER_METHODS = ("to_megatron_provider", "get_model_config")


def keep_module(name: str) -> bool:
    parts = name.split(".")
    return not any(p in EXCLUDED_PACKAGES for p in parts[1:]) and "tests" not in parts


def build_schema(index: SourceIndex, bridge_version: str, core_version: str, recipe_texts=(),
                 replacements: dict | None = None) -> dict:
    """The whole schema of one release. ``recipe_texts``: bytes of the release's recipe files
    (for the names they use beyond the Megatron-Core facts); ``replacements``: hand-written
    successors of removed fields, {path: {"replacement", "source"}}, kept when the field is
    really gone."""
    classes = {q: c for q, c in extract_classes(index).items() if keep_module(c["module"])}
    allowed = allowed_values(index)
    aliases, normalisations = constructor_facts(index, classes)
    overlay = {"field_aliases": aliases, "init_aliases": init_aliases(index, classes),
               "init_normalisations": normalisations,
               **factories(index, {"hf_factory_methods": list(HF_FACTORY_METHODS),
                                   "hf_provider_methods": list(HF_PROVIDER_METHODS)})}
    schema = {
        "format": FORMAT,
        "megatron_bridge_version": bridge_version,
        "megatron_core_version": core_version,
        "root": CONFIG_CONTAINER,
        "classes": classes,
        "enums": extract_enums(index, classes),
        "hf_provider": hf_provider(index),
        "mixed_precision_recipes": mixed_precision_recipes(index),
        "mixed_precision_lookup": mixed_precision_lookup(index),
        "deprecated_fields": deprecated_fields(index, classes, CONFIG_CONTAINER),
        "facts": {
            "allowed_values": allowed,
            "allowed_values_from_bridge": bridge_used_values(recipe_texts, allowed),
            "cuda_graph_deprecated_names": graph_name_deprecations(index),
            "checks": source_checks(lambda relative: _module_text(index, relative)),
            "provider_attributes": provider_attributes(index, classes, TRANSFORMER_CONFIG),
            "self_preserving_methods": self_preserving_methods(index, classes),
            "hf_provider_classes": hf_provider_classes(index, classes, TRANSFORMER_CONFIG),
            "flex_backend_gpus": flex_backend_gpus(index),
            "collate_pad_multiple": collate_pad_multiple(index),
        },
        "overlay": {key: value for key, value in overlay.items() if value},
    }
    schema.update(hf_derived(index, classes, TRANSFORMER_CONFIG))
    _add_replacements(schema, replacements or {})
    compact_fields(classes)
    share_inherited_fields(classes)
    return schema


def _module_text(index: SourceIndex, relative: str) -> str | None:
    name = "megatron." + relative.removesuffix(".py").replace("/", ".")
    module = index.modules.get(name)
    return read_regular(module.path, MAX_MODULE_BYTES).decode("utf-8", "replace") if module is not None else None


def _add_replacements(schema: dict, replacements: dict) -> None:
    root = schema["classes"][CONFIG_CONTAINER]["fields"]
    for path, entry in replacements.items():
        top, _, name = path.partition(".")
        holders = root.get(top, {}).get("classes", ())
        if holders and not any(name in schema["classes"].get(q, {}).get("fields", {}) for q in holders):
            schema["deprecated_fields"].setdefault(path, entry)


def compact_fields(classes: dict[str, dict]) -> None:
    """Drop keys the loader fills in anyway: empty ``classes``, null non-value defaults."""
    for cls in classes.values():
        for spec in cls["fields"].values():
            if not spec.get("classes"):
                spec.pop("classes", None)
            if spec.get("default") is None and spec["default_kind"] != "value":
                spec.pop("default", None)


def share_inherited_fields(classes: dict[str, dict]) -> None:
    """Store a subclass's fields as ``fields_from`` its first dataclass base plus what it adds
    or re-declares, wherever that reproduces the full, ordered field list exactly."""
    full = {q: dict(c["fields"]) for q, c in classes.items()}
    for qualname, cls in classes.items():
        base = next((b for b in cls["bases"] if b in full and b != qualname), None)
        if base is None:
            continue
        own = {k: v for k, v in full[qualname].items() if full[base].get(k) != v}
        rebuilt = {**full[base], **own}
        if list(rebuilt.items()) == list(full[qualname].items()):
            cls["fields_from"] = base
            cls["fields"] = own


def dump(schema: dict) -> str:
    """Sorted keys; one line per class so diffs between regenerations stay readable."""
    head = {k: v for k, v in schema.items() if k != "classes"}
    lines = ["{", '"classes": {']
    items = sorted(schema["classes"].items())
    for i, (qualname, cls) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(qualname)}: {json.dumps(cls, sort_keys=True, separators=(',', ':'))}{comma}")
    lines.append("},")
    rest = json.dumps(head, sort_keys=True, indent=1)
    lines.append(rest[1:].lstrip("\n"))
    return "\n".join(lines) + "\n"
