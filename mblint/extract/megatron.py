"""Megatron-Bridge specifics: config classes and enums from the schema, constructors with their
defaults, Hugging Face providers and mixed-precision factories.
"""

from __future__ import annotations

import ast
from itertools import repeat
from pathlib import Path
from typing import Any

from mblint.extract.hf_models import NOT_GIVEN
from mblint.extract.limits import BudgetExceeded
from mblint.extract.modules import module_name_guess
from mblint.extract.positions import _stamp, _with_kind
from mblint.extract.scopes import Frame, LazyImport, ModuleScope, Return
from mblint.extract.values import ClassRef, EnumRef, External, FuncRef, Obj, children_among, merge_values
from mblint.model import UNKNOWN, Origin, Unknown
from mblint.schema import ClassSpec, default_record

HF_PROVIDER_LABEL = "HFModelProvider"


# torch dtypes are values in configs, spelled as Megatron-Bridge's schema spells defaults.
TORCH_DTYPES = {"float32", "float", "float16", "half", "bfloat16", "float64", "double", "int8", "uint8",
                "int16", "int32", "int64", "bool", "float8_e4m3fn", "float8_e5m2"}


_BUILT_PER_OBJECT = object()  # default_table(): default_for() builds a new value each time


_HF_DERIVED = object()  # default_table(): an HF provider field read from the HF config


class _DefaultTable:
    """What ``Interpreter.default_table`` works out once per class from its rows ((name, field
    spec, default) per field): the field names and defaults in the class's order, where
    ``_BUILT_PER_OBJECT`` and ``_HF_DERIVED`` stand for the defaults of the fields listed in
    ``built`` ((name, field spec)) and ``derived``."""

    __slots__ = ("init_fields", "names", "values", "built", "derived", "_keys")

    def __init__(self, rows: tuple, init_fields: list) -> None:
        self.init_fields = init_fields
        self.names = tuple(name for name, _, _ in rows)
        self.values = tuple(default for _, _, default in rows)
        self.built = tuple((name, fspec) for name, fspec, default in rows if default is _BUILT_PER_OBJECT)
        self.derived = tuple(name for name, _, default in rows if default is _HF_DERIVED)
        self._keys = dict.fromkeys(self.names)

    def slots(self, origins: tuple) -> dict:
        """A field table: every field in the class's order with its default and ``origins``.
        Filling a copy of a table of the keys costs less than building one (no resizes)."""
        table = self._keys.copy()
        table.update(zip(self.names, zip(self.values, repeat(origins))))
        return table


def provider_dependent_fields(schema: Any, spec: ClassSpec) -> frozenset[str]:
    """The fields of ``spec`` whose default differs between the provider classes an HF bridge
    can build (the schema's ``hf_provider_classes``): unknown while the class is (DeepSeek's
    MLAModelProvider keeps ``deallocate_pipeline_outputs`` False, GPTModelProvider's is True)."""
    key = (schema.key, spec.qualname)
    found = _PROVIDER_DEPENDENT.get(key)
    if found is None:  # from the schema data's records: building 40 classes' field tables costs a tenth of a one-file run
        others = [schema.classes[q].default_records() for q in schema.facts.get("hf_provider_classes", ())
                  if q in schema.classes]
        found = _PROVIDER_DEPENDENT[key] = frozenset(
            name for name, record in spec.default_records().items()
            if any(other[name] is not record and default_record(other[name]) != default_record(record)
                   for other in others if name in other))
    return found


_PROVIDER_DEPENDENT: dict[tuple, frozenset[str]] = {}


def _may_be_config_class(qualname: str) -> bool:
    return qualname.startswith("megatron") or "." not in qualname or qualname.startswith(".")


def _is_megatron_path(path: Path) -> bool:
    return "megatron" in path.parts


class MegatronMixin:
    """Megatron-Bridge classes, constructors, HF providers and mixed-precision factories. Part of ``Interpreter``."""

    def megatron_class(self, imp: LazyImport) -> Any:
        """A Megatron config class or enum named by an import is taken from the schema
        without reading (or even finding) the module that defines it."""
        if imp.level or imp.attr is None or not (imp.module or "").startswith("megatron"):
            return None
        spec = self.schema.find_class(imp.attr, imp.module)
        if spec is not None and spec.name == imp.attr:
            return ClassRef(spec)
        members = self.schema.find_enum(imp.attr)
        if members is not None:
            return EnumRef(imp.attr, tuple(members.items()))
        return None

    def external(self, qualname: str) -> Any:
        name = qualname.rsplit(".", 1)[-1]
        module = qualname.rsplit(".", 1)[0] if "." in qualname else None
        spec = self.schema.find_class(name, module) if _may_be_config_class(qualname) else None
        if spec is not None:
            return ClassRef(spec)
        members = self.schema.find_enum(name) if _may_be_config_class(qualname) else None
        if members is not None:
            return EnumRef(name, tuple(members.items()))
        return External(qualname)

    def named_mixed_precision(self, name: str) -> "Obj | None":
        """The MixedPrecisionConfig that Megatron-Bridge's ``get_mixed_precision_config(name)``
        builds at job start: the registered factory of that name (hyphens read as
        underscores), interpreted like any other function. None when it cannot be followed."""
        lookup = self.schema.mixed_precision_lookup
        if lookup is None or name not in self.schema.mixed_precision_recipes:
            return None
        path = self.finder.find(lookup["module"])
        scope = self._scope_or_none(path) if path is not None else None
        factory = scope.lookup(name.replace("-", "_")) if scope is not None else None
        if not isinstance(factory, FuncRef):
            return None
        saved = (self.steps, list(self.notes), self.call_sites)
        self.call_sites = ()
        try:
            result = self.call_function(factory, [], {}, None)
        except (BudgetExceeded, Return, RecursionError):
            result = None
        finally:
            self.steps, self.notes, self.call_sites = saved
        if isinstance(result, Obj) and result.cls is not None and result.cls.name == "MixedPrecisionConfig":
            return result
        return None

    def is_mixed_precision_lookup(self, func: FuncRef, args: list, kwargs: dict) -> bool:
        """``get_mixed_precision_config("name")``: its registry is filled by decorators at
        import time, which mblint does not run, so the factory is looked up by name instead."""
        lookup = self.schema.mixed_precision_lookup
        if lookup is None or func.name != lookup["function"] or kwargs or len(args) != 1 or not isinstance(args[0], str):
            return False
        path = self.finder.find(lookup["module"])
        return path is not None and func.module.resolved_path == self.finder.real_paths.of(path)

    def _class_value(self, name: str, scope: ModuleScope) -> Any:
        spec = self.schema.find_class(name, module_name_guess(scope.path))
        if spec is not None and spec.name == name and _is_megatron_path(scope.path):
            return ClassRef(spec)
        members = self.schema.find_enum(name) if _is_megatron_path(scope.path) else None
        if members is not None:
            return EnumRef(name, tuple(members.items()))
        module = module_name_guess(scope.path)
        return External(f"{module}.{name}" if module else f"<class {name}>")

    def unread_precision_factory(self, qualname: str, args: list, kwargs: dict) -> ClassSpec | None:
        """MixedPrecisionConfig, for a call of a registered mixed-precision factory
        (``bf16_mixed()``, or ``get_mixed_precision_config("bf16_mixed")``) in a module mblint
        cannot read: every factory returns one. Its fields are unknown, but the result is no
        unknown value (``isinstance(cfg.mixed_precision, str)`` is known, and fields the recipe
        sets on it afterwards are known). None for any other call."""
        lookup = self.schema.mixed_precision_lookup
        module, _, name = qualname.rpartition(".")
        if lookup is None or module != lookup["module"] or kwargs:
            return None
        recipes = self.schema.mixed_precision_recipes
        if name == lookup["function"]:
            is_factory = len(args) == 1 and isinstance(args[0], str) and args[0] in recipes
        else:
            is_factory = not args and name in recipes
        return self.schema.find_class("MixedPrecisionConfig", module) if is_factory else None

    def hf_factories_names(self) -> set[str]:
        return {entry.split(".")[-1] for entry in self.hf_factories}

    def construct(self, spec: ClassSpec, args: list, kwargs: dict, node: ast.AST, frame: Frame, kw_origins: dict) -> Any:
        call_origin = self.origin(node, frame)
        obj = self.new_obj(spec, call_origin)
        default_origin = _with_kind(call_origin, "default")
        defaults = (default_origin,) if default_origin else ()
        table = self.default_table(spec, hf_provider=False)
        init_fields = table.init_fields
        for index, value in enumerate(args):
            if index < len(init_fields):
                kwargs.setdefault(init_fields[index], value)
                kw_origins.setdefault(init_fields[index], call_origin)
        # Every field in the class's order, then the slots that are not plain defaults.
        obj.fields = fields = table.slots(defaults)
        for name, fspec in table.built:
            if name not in kwargs:
                fields[name] = (self.default_for(fspec, default_origin), defaults)
        for name, value in kwargs.items():  # a field in its place; any other after them (the real constructor raises)
            origin = _stamp(kw_origins.get(name, call_origin))
            fields[name] = (value, (origin,) if origin is not None else ())
        for name, target in self.init_aliases.get(spec.name, {}).items():
            slot = obj.fields.get(name)
            if slot is not None and slot[1] and slot[1][-1].kind != "default":
                obj.fields[target] = slot
        self.apply_init_normalisations(spec, fields, defaults)
        declared = spec.fields
        aliases = self.init_aliases.get(spec.name, {}).values()
        if all(name in declared for name in kwargs) and all(name in declared for name in aliases):
            obj.declared = fields  # its other keys are the class's fields
        return obj

    def apply_init_normalisations(self, spec: ClassSpec, fields: dict, defaults: tuple) -> None:
        """A constructor's own plain assignments (__post_init__, __setattr__ during __init__), on
        the values at construction: later assignments to the object override them."""
        for name, rule in self.init_normalisations.get(spec.name, {}).items():
            source = fields.get(rule["from"]) if "from" in rule else self.post_init_value(name, rule, fields, defaults)
            if source is not None and name in fields:
                fields[name] = source

    def rerun_constructor(self, obj: Obj, origin: Origin | None) -> None:
        """What ``dataclasses.replace()`` runs again on the copy it builds from a config object's
        fields: the ``init=False`` fields back to their defaults, the constructor's own assignments."""
        default_origin = _with_kind(origin, "default")
        defaults = (default_origin,) if default_origin else ()
        fields = obj.writable()
        for name, fspec in obj.cls.fields.items():
            if not fspec.init:
                fields[name] = (self.default_for(fspec, default_origin), defaults)
        self.apply_init_normalisations(obj.cls, fields, defaults)

    def post_init_value(self, name: str, rule: dict, fields: dict, defaults: tuple) -> tuple | None:
        """The slot ``self.x = value`` gives, or None where its ``if [not] self.flag`` is false;
        where the flag is unknown, the field is unknown unless it already holds the value."""
        flag = rule.get("if", rule.get("if_not"))
        if flag is None:
            return (rule["value"], defaults)
        slot, current = fields.get(flag), fields.get(name)
        holds = self.truth(slot[0]) if slot is not None else None
        if holds is None:
            return None if slot is None or current is None else (merge_values(current[0], rule["value"]), defaults)
        return (rule["value"], defaults) if holds == ("if" in rule) else None

    def default_table(self, spec: ClassSpec, hf_provider: bool) -> tuple[tuple, list]:
        """((name, field spec, default) per field, names of the ``__init__`` fields) of a
        class. The default is what ``default_for`` gives, or ``_BUILT_PER_OBJECT`` where it
        makes a new object or list, or ``_HF_DERIVED`` for a field of an HF provider that
        comes from the Hugging Face config."""
        key = (spec, hf_provider)
        table = self.default_tables.get(key)
        if table is None:
            derived = self.schema.hf_derived_fields | provider_dependent_fields(self.schema, spec) if hf_provider else ()
            rows = tuple((name, fspec, _HF_DERIVED if name in derived else
                          _BUILT_PER_OBJECT if fspec.default_kind == "factory" else fspec.default_value())
                         for name, fspec in spec.fields.items())
            table = self.default_tables[key] = _DefaultTable(rows, [name for name, f in spec.fields.items() if f.init])
        return table

    def default_for(self, fspec, origin: Origin | None) -> Any:
        if fspec.default_kind == "factory":
            if fspec.factory_class:
                spec = self.schema.classes.get(fspec.factory_class)
                if spec is not None:
                    obj = self.new_obj(spec, origin)
                    for name, inner in spec.fields.items():
                        obj.set(name, self.default_for(inner, origin), origin)
                    return obj
                return UNKNOWN
            if isinstance(fspec.default, dict):
                obj = self.new_obj(None, origin)
                for key, value in fspec.default.items():
                    obj.set(key, value, origin)
                return obj
            if isinstance(fspec.default, list):
                return list(fspec.default)
            return UNKNOWN
        return fspec.default_value()

    def hf_provider(self, node: ast.AST, frame: Frame, model_id: Any = None, revision: Any = None,
                    kwargs: dict | None = None) -> Any:
        """What ``to_megatron_provider()`` returns: the provider its bridge builds from the
        model's config.json when that is at hand, else a provider whose architecture is unknown."""
        load_weights = (kwargs or {}).get("load_weights", NOT_GIVEN)
        built = self.hf_provider_from_config(model_id, revision, load_weights, node, frame)
        if built is not None:
            return built
        spec = self.schema.classes.get(self.schema.hf_provider or "") or self.schema.find_class("GPTModelProvider")
        if spec is None:
            return UNKNOWN
        origin = self.origin(node, frame)
        obj = self.new_obj(spec, origin)
        # The provider class depends on the model family (GPT, Mamba, ...): mblint only
        # knows the fields every provider shares, so the class itself stays unknown.
        obj.label = HF_PROVIDER_LABEL
        unknown_origin = (_with_kind(origin, "unknown"),)
        default_origin = _with_kind(origin, "default")
        defaults = (default_origin,)
        table = self.default_table(spec, hf_provider=True)
        # Every field in the class's order, then the slots that are not plain defaults.
        obj.fields = fields = table.slots(defaults)
        fields.update(zip(table.derived, repeat((Unknown("from the Hugging Face config or its provider class"),
                                                 unknown_origin))))
        for name, fspec in table.built:
            fields[name] = (self.default_for(fspec, default_origin), defaults)
        if "hf_model_id" in obj.fields and isinstance(model_id, str):
            obj.fields["hf_model_id"] = (model_id, (origin,))
        obj._children = children_among(fields, [name for name, _ in table.built])  # defaults are no objects
        obj.open = True
        return obj

