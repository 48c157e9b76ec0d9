"""Model architecture from a Hugging Face ``config.json``, mapped to provider fields the way
Megatron-Bridge's model bridges map it (``AutoBridge.from_hf_pretrained(...).to_megatron_provider()``).

The bridge for the config's architecture is found in the Megatron-Bridge source at hand: the
classes decorated with ``@MegatronModelBridge.register_bridge(source=..., provider=...)`` under
``megatron/bridge/models``. Its ``provider_bridge`` (and any helper method of its class chain)
is interpreted like recipe code, with ``hf_pretrained.config`` holding the values of the
config.json. Where the chain reaches ``MegatronModelBridge`` itself, its generic conversion
(``provider_bridge`` / ``hf_config_to_provider_kwargs``) is applied here: its tables
(``CONFIG_MAPPING``, the RoPE scaling mappings, the ``PROVIDER_CLASS``) are read from the
bridge classes' source, never written down in mblint.

A config key that is missing from config.json may still be an attribute of the transformers
config class (a class default): what the bridge maps from it is unknown, never guessed. Where
``CONFIG_MAPPING`` names several HF keys for one field (``num_experts``, ``num_local_experts``,
``n_routed_experts``), the key the config.json holds gives the value: the others are other
spellings of the same quantity (a config class that has one as an attribute_map alias reads
the same value).
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

from mblint.extract.hf_transformers import ABSENT_ATTRIBUTE, config_class_chain
from mblint.extract.modules import module_name_guess
from mblint.extract.positions import _with_kind
from mblint.extract.scopes import Frame
from mblint.extract.values import External, FuncRef, Obj, true_slots
from mblint.coverage import MODEL_CONFIG_INCOMPLETE, MODEL_CONFIG_MISSING, Gap
from mblint.hf_config import HF_CONFIG_UNUSABLE, HFConfig, HFConfigError, find_config, read_config
from mblint.model import UNKNOWN, Origin, Unknown, is_known
from mblint.paths import read_head
from mblint.schema import ClassSpec, nearest_release
from mblint.schema.transformers import BundledConfigClass, bundled_chain

BRIDGE_PACKAGE = "megatron.bridge.models"
BASE_BRIDGE = "megatron.bridge.models.conversion.model_bridge.MegatronModelBridge"
MAX_BRIDGE_FILES = 2000
# The base class's generic conversion, applied by mblint where the chain reaches it.
# ``_hf_config_to_megatron_kwargs`` is the generic conversion's name where
# ``hf_config_to_provider_kwargs`` became a thin wrapper around it (after 0.6).
CONVERSION_METHODS = ("hf_config_to_provider_kwargs", "_hf_config_to_megatron_kwargs")
NATIVE_METHODS = ("provider_bridge", "make_vocab_size_divisible_by", *CONVERSION_METHODS)
_DTYPES = {"float16": "torch.float16", "bfloat16": "torch.bfloat16", "float32": "torch.float32"}
_PRETRAINED = ClassSpec("transformers.PreTrainedModel", "PreTrainedModel", "transformers", (), fields={})
_HF_CONFIG = ClassSpec("transformers.PretrainedConfig", "PretrainedConfig", "transformers", (), fields={})
_MISSING = object()
NOT_GIVEN = object()  # an argument not given (to_megatron_provider(load_weights=...))
NO_INDEX_YET = object()



class BridgeClass:
    """A class of a Megatron-Bridge models module: its class-body assignments and methods."""

    __slots__ = ("qualname", "scope", "node", "source_nodes", "provider")

    def __init__(self, qualname: str, scope: Any, node: ast.ClassDef) -> None:
        self.qualname = qualname
        self.scope = scope
        self.node = node
        self.source_nodes: list[ast.expr] = []  # register_bridge(source=...)
        self.provider: ast.expr | None = None  # register_bridge(provider=...)
        for decorator in node.decorator_list:
            if isinstance(decorator, ast.Call) and _name_tail(decorator.func) == "register_bridge":
                for keyword in decorator.keywords:
                    if keyword.arg == "source":
                        self.source_nodes.append(keyword.value)
                    elif keyword.arg == "provider":
                        self.provider = keyword.value

    def method(self, name: str) -> ast.FunctionDef | None:
        found = None
        for stmt in self.node.body:
            if isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                found = stmt
        return found

    def assignment(self, name: str) -> ast.expr | None:
        found = None
        for stmt in self.node.body:
            if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in stmt.targets):
                found = stmt.value
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.target.id == name:
                found = stmt.value
        return found


def _name_tail(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return None


class BridgeIndex:
    """The bridge classes of one Megatron-Bridge source tree, by the HF architecture they
    register for; other classes (bases) are read when a chain reaches them."""

    def __init__(self, interp: Any, models_dir: Path) -> None:
        self.interp = interp
        self.classes: dict[str, BridgeClass] = {}
        self.by_source: dict[str, list[BridgeClass]] = {}
        self._read_modules: set[Path] = set()
        files = sorted(models_dir.rglob("*.py"))[:MAX_BRIDGE_FILES]
        for path in files:
            if not interp.finder.allows(path):  # a committed link out of the project
                continue
            try:
                head = read_head(path, 1 << 20)
            except (OSError, ValueError):
                continue
            if b"register_bridge" in head:
                self._read_module(path)
        for cls in self.classes.values():
            for node in cls.source_nodes:
                name = self.source_name(cls, node)
                if name:
                    self.by_source.setdefault(name, []).append(cls)

    def source_name(self, cls: BridgeClass, node: ast.expr) -> str | None:
        """The architecture a bridge registers for: a class (its name) or a string."""
        if isinstance(node, ast.Constant):
            return node.value if isinstance(node.value, str) else None
        if isinstance(node, ast.Name):  # a module constant holding the name; an imported class is not read
            for stmt in cls.scope.source.tree.body:
                if isinstance(stmt, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in stmt.targets):
                    value = self.interp.eval(stmt.value, Frame(cls.scope))
                    return value if isinstance(value, str) else None
        return _name_tail(node)

    def _read_module(self, path: Path) -> None:
        if path in self._read_modules:
            return
        self._read_modules.add(path)
        scope = self.interp._scope_or_none(path)
        module = module_name_guess(path)
        if scope is None or module is None:
            return
        for stmt in scope.source.tree.body:
            if isinstance(stmt, ast.ClassDef):
                qualname = f"{module}.{stmt.name}"
                self.classes.setdefault(qualname, BridgeClass(qualname, scope, stmt))

    def find(self, qualname: str) -> BridgeClass | None:
        found = self.classes.get(qualname)
        if found is None and "." in qualname:
            path = self.interp.finder.find(qualname.rsplit(".", 1)[0])
            if path is not None:
                self._read_module(path)
                found = self.classes.get(qualname)
        return found

    def chain(self, cls: BridgeClass) -> list[BridgeClass] | None:
        """The class and its bases up to ``MegatronModelBridge`` (single inheritance, as the
        bridges are written), or None where a base cannot be read."""
        chain = [cls]
        while chain[-1].qualname != BASE_BRIDGE:
            current = chain[-1]
            if len(current.node.bases) != 1 or len(chain) > 20:
                return None
            base = self.interp.eval(current.node.bases[0], Frame(current.scope))
            found = self.find(base.qualname) if isinstance(base, External) else None
            if found is None or found in chain:
                return None
            chain.append(found)
        return chain

    def bridge_for(self, config: dict) -> BridgeClass | None:
        """The bridge AutoBridge dispatches to: by the auto_map class or the first
        architecture a bridge is registered for (one bridge only, else none)."""
        names = []
        auto_map = config.get("auto_map")
        if isinstance(auto_map, dict) and isinstance(auto_map.get("AutoModelForCausalLM"), str):
            names.append(auto_map["AutoModelForCausalLM"].rsplit(".", 1)[-1])
        architectures = config.get("architectures")
        if isinstance(architectures, list):
            names.extend(name for name in architectures if isinstance(name, str))
        for name in names:
            found = self.by_source.get(name)
            if found:
                return found[0] if len(found) == 1 else None
        return None


class BridgeState:
    """One ``to_megatron_provider()`` being interpreted: the bridge's class chain, the HF
    config and the objects standing for it."""

    __slots__ = ("index", "chain", "config", "config_obj", "pretrained", "display", "origins", "transformers",
                 "post_init", "sub_states", "unknown_keys")

    def __init__(self, index: BridgeIndex, chain: list[BridgeClass], config: HFConfig, display: str) -> None:
        self.index = index
        self.chain = chain
        self.config = config
        self.display = display
        self.origins: dict[str, Origin] = {}
        self.config_obj: Obj | None = None
        self.pretrained: Obj | None = None
        self.transformers = None  # the transformers config class: its source chain, else the bundled facts
        self.post_init: dict[str, tuple] = {}  # key -> (value, origin) its __post_init__ gives
        self.sub_states: list[BridgeState] = []  # sub-configs (text_config) the bridge may convert
        self.unknown_keys: dict[str, str] = {}  # provider field -> the key config.json leaves out, of unknown value


class SubConfig:
    """A sub-config's values (``text_config``) as an ``HFConfig``: each key is located at the
    config.json key it came from (``where``)."""

    __slots__ = ("path", "values", "parent", "where")

    def __init__(self, parent: HFConfig, values: dict, where: dict) -> None:
        self.path = parent.path
        self.values = values
        self.parent = parent
        self.where = where

    def position(self, key: str) -> tuple[int, int, int, int]:
        return self.parent.position(self.where.get(key, key))


class BridgeInstance:
    """The bridge's ``self`` (``start`` 0), or what ``super()`` gives inside a method of the
    class at ``defined_at`` (its methods are looked up from the next class on)."""

    __slots__ = ("state", "start", "defined_at")

    def __init__(self, state: BridgeState, start: int, defined_at: int) -> None:
        self.state = state
        self.start = start
        self.defined_at = defined_at

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, BridgeInstance) and other.state is self.state and other.start == self.start
                and other.defined_at == self.defined_at)

    def __hash__(self) -> int:
        return hash((id(self.state), self.start, self.defined_at))


class HFModelsMixin:
    """Providers from HF configs. Part of ``Interpreter``."""

    def hf_config_for(self, model_id: Any, revision: Any, deps: set) -> HFConfig | str | None:
        """The config.json of ``model_id`` at ``revision``, read once per run; None when it is
        not available, why when it is there but cannot be used (outside the project, too
        large, not JSON). ``deps`` gets the files the answer depends on (for the result cache)."""
        if not isinstance(model_id, str) or not (revision is None or isinstance(revision, str)):
            return None
        key = (model_id, revision)
        cache = self.hf_configs
        if key not in cache:
            watched: list = []
            confinement = self.finder.confinement
            try:
                path = find_config(model_id, revision, self.hf_config_folders, watched=watched,
                                   allows=confinement.allows if confinement is not None else None)
                cache[key] = (read_config(path) if path is not None else None, watched)
            except HFConfigError as error:
                cache[key] = (str(error), watched)
        config, watched = cache[key]
        deps.update(watched)
        return config

    def bridge_index(self) -> BridgeIndex | None:
        if self._bridge_index is NO_INDEX_YET:
            base = self.finder.find(BASE_BRIDGE.rsplit(".", 1)[0])
            self._bridge_index = BridgeIndex(self, base.parent.parent) if base is not None else None
        return self._bridge_index

    def hf_provider_from_config(self, model_id: Any, revision: Any, load_weights: Any, node: ast.AST,
                                frame: Frame) -> Obj | None:
        """The provider ``to_megatron_provider()`` returns, when the model's config.json is at
        hand and its bridge can be followed; else None."""
        deps = frame.scope.deps
        config = self.hf_config_for(model_id, revision, deps)
        if isinstance(config, str):
            self.notes.append(HF_CONFIG_UNUSABLE + config)
            return None
        if config is None:
            named = model_id if isinstance(model_id, str) else ""
            self.gaps.append(Gap(self.origin(node, frame), MODEL_CONFIG_MISSING, named))
            return None
        index = self.bridge_index()
        bridge = index.bridge_for(config.values) if index is not None else None
        chain = index.chain(bridge) if bridge is not None else None
        if chain is None:
            self.notes.append(f"{config.path}: no Megatron-Bridge model bridge found for its architecture")
            return None
        deps.update(cls.scope.path for cls in chain)
        state = BridgeState(index, chain, config, self.finder.display(config.path))
        model_type = config.values.get("model_type")
        if model_type not in self.hf_config_classes:
            self.hf_config_classes[model_type] = (config_class_chain(self, model_type) or bundled_chain(
                nearest_release(self.schema.megatron_bridge_version or self.schema.line), model_type))
        state.transformers = self.hf_config_classes[model_type]
        state.config_obj = self.config_object(state, node)
        if state.transformers is not None:
            self.text_sub_config(state, node)
        state.pretrained = self.new_obj(_PRETRAINED, None)
        state.pretrained.set("config", state.config_obj, None)
        state.pretrained.open = True
        provider = self.bridge_call(BridgeInstance(state, 0, 0), "provider_bridge", [state.pretrained], {}, node, frame)
        if not isinstance(provider, Obj) or provider.cls is None:
            return None
        for name, (value, _) in list(provider.fields.items()):
            if value is state.config_obj or value is state.pretrained:
                provider.set(name, Unknown("a Hugging Face config object"), self.origin(node, frame))
        origin = self.origin(node, frame)
        if load_weights is not False and "perform_initialization" in provider.fields:
            provider.set("perform_initialization", False if load_weights is True or load_weights is NOT_GIVEN else UNKNOWN, origin)
        if "hf_model_id" in provider.fields:
            provider.set("hf_model_id", model_id, origin)
        self.record_unknown_keys(state, provider, model_id, origin)
        if isinstance(revision, str) and "hf_model_revision" in provider.fields:
            provider.set("hf_model_revision", revision, origin)
        return provider

    def record_unknown_keys(self, state: BridgeState, provider: Obj, model_id: Any, origin: Origin) -> None:
        """A gap at the call when provider fields stay unknown because config.json leaves out
        their keys and the transformers configuration class does not say what they default to."""
        missing = {}
        for current in (state, *state.sub_states):
            for field, key in current.unknown_keys.items():
                slot = provider.fields.get(field)
                if slot is not None and not is_known(slot[0]):
                    missing.setdefault(field, key)
        if not missing:
            return
        model_type = state.config.values.get("model_type")
        named = f"model_type {model_type!r}" if isinstance(model_type, str) else "its model_type"
        if state.transformers is None:
            why = (f"no transformers configuration class of {named} is known here (its source is not at hand "
                   "and mblint's facts of the transformers release this Megatron-Bridge pins do not have it)")
        else:
            why = f"the transformers configuration class of {named} computes them in a way mblint does not read"
        fields = ", ".join(f"model.{field} ({key})" for field, key in sorted(missing.items()))
        self.gaps.append(Gap(origin, MODEL_CONFIG_INCOMPLETE, model_id if isinstance(model_id, str) else "",
                             fields, why))

    def config_object(self, state: BridgeState, node: ast.AST) -> Obj:
        """The config object ``hf_pretrained.config``: config.json's values, the config class's
        defaults for the keys it leaves out, then what its ``__post_init__`` works out."""
        config = self.hf_value(state, state.config.values, None)
        config.cls = _HF_CONFIG
        config.open = True  # the transformers config class may add attributes
        state.config_obj = config
        if state.transformers is not None:
            for key in state.transformers.declared() - set(state.config.values):
                value, origin = self.hf_attribute(state, key)
                if value is not ABSENT_ATTRIBUTE:
                    config.set(key, value, origin)
            config.open = not state.transformers.closed
            self.run_config_post_init(state, node)
        return config

    def text_sub_config(self, state: BridgeState, node: ast.AST) -> None:
        """``hf_config.text_config`` of a composite config (a vision-language model): the class
        its ``sub_configs`` names, built from config.json's ``text_config`` object, or (a hub
        config saved flat, where the config's ``__post_init__`` says so) from the top-level
        keys that are that class's fields. Its own defaults and ``__post_init__`` apply. A
        bridge that converts it (``self.hf_config_to_provider_kwargs(text_config)``) gets the
        generic conversion of those values."""
        chain = state.transformers.sub_config("text_config")
        if chain is None or not chain.complete:
            return
        values = state.config.values
        nested = values.get("text_config")
        if isinstance(nested, dict):
            sub = SubConfig(state.config, nested, {key: "text_config" for key in nested})
        elif nested is None:
            flat, with_dtype = state.transformers.builds_from_flat_keys("text_config")
            if not flat:
                return
            own = state.transformers.field_names()
            wanted = chain.field_names() | state.transformers.flat_extra_keys("text_config")
            picked = {key: value for key, value in values.items() if key in wanted and key not in own}
            where = {key: key for key in picked}
            dtype_key = "torch_dtype" if "torch_dtype" in values else "dtype"
            if with_dtype and dtype_key in values:
                picked["dtype"] = values[dtype_key]
                where["dtype"] = dtype_key
            sub = SubConfig(state.config, picked, where)
        else:
            return
        sub_state = BridgeState(state.index, state.chain, sub, state.display)
        sub_state.transformers = chain
        text = self.config_object(sub_state, node)
        origin = self.hf_origin(state, "text_config") if "text_config" in values else None
        state.config_obj.set("text_config", text, origin)
        state.post_init["text_config"] = (text, origin)
        state.sub_states.append(sub_state)

    def run_config_post_init(self, state: BridgeState, node: ast.AST) -> None:
        """transformers 5 builds a config as a dataclass: the fields (config.json's values, else
        the declared defaults), then ``__post_init__``, which works some attributes out from
        others (Llama: ``head_dim = hidden_size // num_attention_heads`` when None). The model
        class's own ``__post_init__`` is interpreted with ``self`` the config; only the
        attributes that no other method (of it or of a base) assigns take its result, the
        others are left as they were."""
        chain = state.transformers
        keys = chain.post_init_keys()
        if not keys:
            return
        config = state.config_obj
        if isinstance(chain, BundledConfigClass):
            self.apply_bundled_post_init(state, chain, keys)
            return
        before = dict(config.fields)
        was_open = config.open
        for key in keys:
            if key not in state.config.values:
                config.set(key, chain.declared_default(key), None)
        model = chain.classes[0]
        self.call_function(FuncRef(model.scope, model.post_init), [config], {}, node)
        table = config.writable()
        for key in list(table):
            if key in keys:
                value, origins = table[key]
                origin = _with_kind(origins[-1], "default") if origins else None
                table[key] = (value, (origin,) if origin is not None else ())
                state.post_init[key] = (value, origin)
            elif key in before:
                table[key] = before[key]
            else:
                del table[key]
        config.open = was_open

    def apply_bundled_post_init(self, state: BridgeState, chain: BundledConfigClass, keys: set[str]) -> None:
        """``run_config_post_init`` from the bundled facts of the config class: its rules
        applied to config.json's values, else the declared defaults."""
        config = state.config_obj
        current = {key: slot[0] for key, slot in config.fields.items()}
        current.update((key, chain.declared_default(key)) for key in keys if key not in state.config.values)
        for key, value in chain.post_init_values(current, state.config.values).items():
            config.set(key, value, None)
            state.post_init[key] = (value, None)

    def hf_attribute(self, state: BridgeState, key: str) -> tuple[Any, Origin | None]:
        """(value, origin) of the config's attribute ``key``: what the config class's
        ``__post_init__`` made of it, else config.json's value, else the transformers config
        class's default (``ABSENT_ATTRIBUTE`` where it has none, UNKNOWN where it cannot be
        read)."""
        if key in state.post_init:
            return state.post_init[key]
        values = state.config.values
        if key in values:
            return self.hf_value(state, values[key], key), self.hf_origin(state, key)
        if state.transformers is None:
            return Unknown(f"{key} is not in config.json (a transformers default?)"), None
        value, where = state.transformers.default(key)
        if where is None:
            return value, None
        scope, expr = where
        return value, _with_kind(self.origin(expr, Frame(scope)), "default")

    def hf_origin(self, state: BridgeState, key: str) -> Origin:
        line, column, end_line, end_column = state.config.position(key)
        self.clock += 1
        return Origin(state.display, line, column, end_line, end_column, "default", self.clock, self.call_sites)

    def hf_value(self, state: BridgeState, value: Any, key: str | None) -> Any:
        """A JSON value as the interpreter holds it: objects become dicts, located at the
        top-level key they are under."""
        if isinstance(value, dict):
            origin = self.hf_origin(state, key) if key is not None else None
            obj = self.new_obj(None, origin)
            for name, inner in value.items():
                obj.set(name, self.hf_value(state, inner, key if key is not None else name),
                        self.hf_origin(state, key if key is not None else name))
            return obj
        if isinstance(value, list):
            return [self.hf_value(state, item, key) for item in value]
        return value

    # ----- the bridge's methods -------------------------------------------------------------

    def bridge_attr(self, owner: BridgeInstance, name: str) -> Any:
        state = owner.state
        if name == "hf_config":
            return state.config_obj
        if name == "hf_pretrained":
            return state.pretrained
        for cls in state.chain[owner.start:]:
            if cls.method(name) is not None:
                from mblint.extract.values import BoundMethod

                return BoundMethod(owner, name)
            if cls.assignment(name) is not None:
                return self.class_attribute(state, name)
        return UNKNOWN

    def class_attribute(self, state: BridgeState, name: str, start: int = 0) -> Any:
        """A class attribute of the chain (``CONFIG_MAPPING``, ``PROVIDER_CLASS``...), its
        expression evaluated in its module; ``Base.NAME`` reads the base's."""
        for position, cls in enumerate(state.chain[start:], start):
            expr = cls.assignment(name)
            if expr is not None:
                return self.class_expr(state, cls, expr, position)
        return _MISSING

    def class_expr(self, state: BridgeState, cls: BridgeClass, expr: ast.expr, position: int) -> Any:
        if isinstance(expr, ast.BinOp) and isinstance(expr.op, ast.Add):
            left = self.class_expr(state, cls, expr.left, position)
            right = self.class_expr(state, cls, expr.right, position)
            if isinstance(left, list) and isinstance(right, list):
                return left + right
            return UNKNOWN
        if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
            owner = self.eval(expr.value, Frame(cls.scope))
            if isinstance(owner, External):
                for index, other in enumerate(state.chain):
                    if other.qualname == owner.qualname:
                        value = self.class_attribute(state, expr.attr, index)
                        return UNKNOWN if value is _MISSING else value
                found = state.index.find(owner.qualname)
                if found is not None:
                    chain = state.index.chain(found)
                    if chain is not None:
                        other_state = BridgeState(state.index, chain, state.config, state.display)
                        value = self.class_attribute(other_state, expr.attr)
                        return UNKNOWN if value is _MISSING else value
            return UNKNOWN
        return self.eval(expr, Frame(cls.scope))

    def bridge_call(self, owner: BridgeInstance, name: str, args: list, kwargs: dict, node: ast.AST,
                    frame: Frame) -> Any:
        """``self.name(...)`` / ``super().name(...)`` of a bridge: the first class of the chain
        from ``owner.start`` that defines it; the base's generic conversion where it is
        ``MegatronModelBridge``'s."""
        state = owner.state
        for position in range(owner.start, len(state.chain)):
            cls = state.chain[position]
            method = cls.method(name)
            if method is None:
                continue
            if cls.qualname == BASE_BRIDGE and name in NATIVE_METHODS:
                return self.base_bridge_method(state, name, args, node, frame)
            this = BridgeInstance(state, 0, position)  # ``self``, or ``cls`` of a classmethod
            if any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in method.decorator_list):
                return self.call_function(FuncRef(cls.scope, method), list(args), dict(kwargs), node)
            return self.call_function(FuncRef(cls.scope, method), [this, *args], dict(kwargs), node)
        self.havoc_values(args + list(kwargs.values()), node, frame)
        return UNKNOWN

    def bridge_super(self, frame: Frame) -> Any:
        this = frame.locals.get("self")
        if isinstance(this, BridgeInstance):
            return BridgeInstance(this.state, this.defined_at + 1, this.defined_at + 1)
        return UNKNOWN

    # ----- MegatronModelBridge's generic conversion ---------------------------------------

    def base_bridge_method(self, state: BridgeState, name: str, args: list, node: ast.AST, frame: Frame) -> Any:
        if name == "make_vocab_size_divisible_by":
            return _vocab_divisor(args[0]) if args and isinstance(args[0], int) and args[0] > 0 else UNKNOWN
        if args and args[0] is not state.pretrained and args[0] is not state.config_obj:
            sub = next((sub for sub in state.sub_states if sub.config_obj is args[0]), None)
            if sub is None or name == "provider_bridge":
                return UNKNOWN  # another config than the model's
            state = sub
        if name == "provider_bridge" and self.overrides(state, "hf_config_to_provider_kwargs"):
            kwargs, origins = self.overridden_provider_kwargs(state, node, frame)
        else:
            kwargs, origins = self.provider_kwargs(state)
        if name in CONVERSION_METHODS:
            if kwargs is None:
                return UNKNOWN
            result = self.new_obj(None, self.origin(node, frame))
            for key, value in kwargs.items():
                result.set(key, value, origins.get(key))
            return result
        return self.base_provider(state, kwargs, origins, node, frame)

    @staticmethod
    def overrides(state: BridgeState, name: str) -> bool:
        """Whether a bridge class below ``MegatronModelBridge`` defines ``name``."""
        return any(cls.method(name) is not None for cls in state.chain[:-1])

    def overridden_provider_kwargs(self, state: BridgeState, node: ast.AST, frame: Frame) -> tuple[dict | None, dict]:
        """The kwargs a bridge's own ``hf_config_to_provider_kwargs`` returns, interpreted;
        None when they are not a dict mblint can read whole."""
        result = self.bridge_call(BridgeInstance(state, 0, 0), "hf_config_to_provider_kwargs",
                                  [state.config_obj], {}, node, frame)
        if not (isinstance(result, Obj) and result.is_dict and not result.open):
            return None, {}
        slots = true_slots(result)
        kwargs = {key: value for key, (value, _) in slots.items()}
        origins = {key: found[-1] for key, (_, found) in slots.items() if found}
        return kwargs, origins

    def provider_class(self, state: BridgeState) -> ClassSpec | None:
        for cls in state.chain:
            expr = cls.provider if cls.provider is not None else cls.assignment("PROVIDER_CLASS")
            if expr is None or (isinstance(expr, ast.Constant) and expr.value is None):
                continue
            value = self.eval(expr, Frame(cls.scope))
            return value.spec if hasattr(value, "spec") and isinstance(value.spec, ClassSpec) else None
        return self.schema.find_class("GPTModelProvider")

    def provider_kwargs(self, state: BridgeState) -> tuple[dict | None, dict]:
        """The generic conversion (``hf_config_to_provider_kwargs``): (values, origins) by
        provider field; (None, {}) when mblint cannot follow it (every mapped field unknown)."""
        values = state.config.values
        kwargs: dict[str, Any] = {}
        origins: dict[str, Origin] = {}
        mapping = self.class_attribute(state, "CONFIG_MAPPING")
        if not isinstance(mapping, list) or self.overrides(state, "_should_map_hf_config_field"):
            return None, {}
        for pair in mapping:
            if not (isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
                return None, {}
            hf_name, field = pair
            if field in kwargs and not (isinstance(kwargs[field], Unknown) and field not in origins):
                continue
            parent, _, child = hf_name.partition(".")
            found = values.get(parent, _MISSING) if parent not in state.post_init else _MISSING
            if child:
                if found is _MISSING:
                    kwargs[field] = Unknown(f"{parent} is not in config.json")
                elif isinstance(found, dict) and child in found:
                    kwargs[field] = self.hf_value(state, found[child], parent)
                    origins[field] = self.hf_origin(state, parent)
            elif found is _MISSING:
                value, origin = self.hf_attribute(state, hf_name)
                if value is ABSENT_ATTRIBUTE:
                    continue
                if isinstance(value, Unknown) or value is UNKNOWN:
                    state.unknown_keys.setdefault(field, hf_name)
                if field not in kwargs or not isinstance(value, Unknown):
                    kwargs[field] = value
                if origin is not None:
                    origins[field] = origin
            else:
                kwargs[field] = self.hf_value(state, found, hf_name)
                origins[field] = self.hf_origin(state, hf_name)
        if isinstance(kwargs.get("rotary_base", UNKNOWN), Unknown):  # rope_theta_from_hf(hf_config)
            parameters = values.get("rope_parameters")
            if isinstance(parameters, dict) and isinstance(parameters.get("rope_theta"), (int, float)):
                kwargs["rotary_base"] = parameters["rope_theta"]
                origins["rotary_base"] = self.hf_origin(state, "rope_parameters")
            else:
                kwargs["rotary_base"] = Unknown("rope_theta of the config class")
        self.rope_scaling_kwargs(state, kwargs, origins)
        vocab = kwargs.get("vocab_size")
        if isinstance(vocab, int) and not isinstance(vocab, bool) and vocab > 0:
            kwargs["make_vocab_size_divisible_by"] = _vocab_divisor(vocab)
            origins["make_vocab_size_divisible_by"] = origins["vocab_size"]
        elif "vocab_size" in kwargs:
            kwargs["make_vocab_size_divisible_by"] = UNKNOWN
        dtype_key = "torch_dtype" if "torch_dtype" in values else "dtype"
        dtype = _DTYPES.get(values.get(dtype_key)) if isinstance(values.get(dtype_key), str) else None
        for field, value in (("fp16", dtype == "torch.float16"), ("bf16", dtype == "torch.bfloat16"),
                             ("params_dtype", dtype)):
            kwargs[field] = value if dtype is not None else Unknown("the config's dtype")
            if dtype is not None:
                origins[field] = self.hf_origin(state, dtype_key)
        kwargs["activation_func"], origin = self.hf_activation(state)
        if origin is not None:
            origins["activation_func"] = origin
        return kwargs, origins

    def hf_activation(self, state: BridgeState) -> tuple[Any, Origin | None]:
        """``self.hf_to_megatron_activation(hidden_act)`` of the generic conversion, with
        ``hidden_act = getattr(hf_config, "hidden_act", None) or getattr(hf_config,
        "hidden_activation", "silu")``, and where that name came from."""
        name, origin = self.hf_attribute(state, "hidden_act")
        if name is ABSENT_ATTRIBUTE:
            name = None
        if not isinstance(name, Unknown) and not name:
            name, origin = self.hf_attribute(state, "hidden_activation")
            if name is ABSENT_ATTRIBUTE:
                name, origin = "silu", None
        if isinstance(name, Unknown):
            return name, None
        node = state.chain[-1].node
        frame = Frame(state.chain[-1].scope)
        return self.bridge_call(BridgeInstance(state, 0, 0), "hf_to_megatron_activation", [name], {}, node, frame), origin

    def rope_type(self, state: BridgeState) -> Any:
        """The RoPE scaling type of ``hf_config.rope_scaling`` (None: no scaling). transformers 5
        keeps it in ``rope_parameters``; a config.json with neither takes the config class's
        defaults (a class may default to YaRN scaling)."""
        values = state.config.values
        for key in ("rope_parameters", "rope_scaling"):
            scaling = values.get(key)
            if isinstance(scaling, dict) and scaling:
                return scaling.get("type") or scaling.get("rope_type")
        if "rope_scaling" in values:
            return None
        if state.transformers is None:
            return UNKNOWN
        defaults = [state.transformers.model_default(key) for key in ("rope_parameters", "rope_scaling")]
        if any(default is not None and default is not ABSENT_ATTRIBUTE for default in defaults):
            return UNKNOWN  # a scaled default, or one mblint cannot read
        return None if None in defaults else UNKNOWN

    def is_mla(self, spec: ClassSpec | None) -> bool:
        return spec is not None and self.schema.is_subclass(spec.qualname, "MLAModelProvider")

    def rope_scaling_kwargs(self, state: BridgeState, kwargs: dict, origins: dict) -> None:
        rope_type = self.rope_type(state)
        mla = self.is_mla(self.provider_class(state))
        if isinstance(rope_type, Unknown):
            names = self.class_attribute(state, "MLA_ROPE_SCALING_MAPPING" if mla else "YARN_ROPE_SCALING_MAPPING")
            for pair in names if isinstance(names, list) else ():
                kwargs.setdefault(pair[1], Unknown("rope scaling of the config class"))
            kwargs["_mla_rope_params"] = UNKNOWN if mla else None
            return
        scaling = state.config.values.get("rope_scaling")
        if rope_type == "yarn":
            table = self.class_attribute(state, "MLA_ROPE_SCALING_MAPPING" if mla else "YARN_ROPE_SCALING_MAPPING")
            if not isinstance(table, list):
                return
            found = {megatron: scaling[hf] for hf, megatron in table if scaling.get(hf) is not None}
            if mla:
                kwargs["_mla_rope_params"] = found or None
            else:
                kwargs["position_embedding_type"] = "yarn"
                kwargs.update(found)
                if "truncate" in scaling:
                    kwargs["yarn_correction_range_round_to_int"] = scaling["truncate"]
                    found["yarn_correction_range_round_to_int"] = True
                for key in found:
                    origins[key] = self.hf_origin(state, "rope_scaling")
        elif mla:
            kwargs["_mla_rope_params"] = {"rotary_scaling_factor": 1.0, "mscale_all_dim": 1.0}

    def base_provider(self, state: BridgeState, kwargs: dict, origins: dict, node: ast.AST, frame: Frame) -> Any:
        """``MegatronModelBridge.provider_bridge``: the provider class built from the kwargs,
        then its position embedding type and MLA RoPE parameters."""
        spec = self.provider_class(state)
        if spec is None:
            return UNKNOWN
        if kwargs is None:
            # The conversion could not be followed: what it maps is unknown, not the class's default.
            kwargs = dict.fromkeys(self.schema.hf_derived_fields & set(spec.fields), UNKNOWN)
            kwargs["_mla_rope_params"] = UNKNOWN
        mla_params = kwargs.pop("_mla_rope_params", None)
        accepted = {key: value for key, value in kwargs.items() if key in spec.fields}
        site = {key: origins[key] for key in accepted if key in origins}
        provider = self.construct(spec, [], accepted, node, frame, site)
        rope_type = self.rope_type(state)
        origin = self.hf_origin(state, "rope_scaling") if "rope_scaling" in state.config.values else self.origin(node, frame)
        if isinstance(rope_type, Unknown):
            provider.set("position_embedding_type", UNKNOWN, origin)
        else:
            provider.set("position_embedding_type", "yarn" if rope_type == "yarn" and not self.is_mla(spec) else "rope",
                         origin)
        if isinstance(mla_params, dict):
            for key, value in mla_params.items():
                provider.set(key, value, origin)
        elif isinstance(mla_params, Unknown):
            for key in ("rotary_scaling_factor", "mscale_all_dim", "original_max_position_embeddings",
                        "beta_fast", "beta_slow", "mscale"):
                if key in provider.fields:
                    provider.set(key, UNKNOWN, origin)
        return provider


def _vocab_divisor(vocab_size: int) -> int:
    """``MegatronModelBridge.make_vocab_size_divisible_by``: the largest power of two up to
    128 that divides the vocabulary size."""
    base = 128
    while vocab_size % base:
        base //= 2
    return base
