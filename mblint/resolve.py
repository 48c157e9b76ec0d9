"""Resolve recipe functions to ``EffectiveConfig``: interpret the recipe, apply YAML override
files, then dotlist overrides, and flatten the object graph with provenance."""

from __future__ import annotations

import ast
from functools import lru_cache
from itertools import repeat
from pathlib import Path
from typing import Any, Iterator

from mblint.extract.interpreter import Interpreter
from mblint.extract.limits import BudgetExceeded
from mblint.extract.modules import (
    MAX_SOURCE_BYTES,
    SOURCE_OVERLAY,
    ModuleFinder,
    RealPaths,
    SourceError,
    installed_megatron_roots,
    read_source,
)
from mblint.extract.positions import _with_kind
from mblint.extract.scopes import Return
from mblint.extract.values import External, FuncRef, Obj, is_missing, is_unknown, true_origins
from mblint.gpus import Gpu, gpu_of_recipe
from mblint.paths import read_regular
from mblint.model import (ABSENT, UNKNOWN, EffectiveConfig, NamedObject, Origin, RecipeRef, ResolvedField, Unknown,
                          _NodeMarker)
from mblint.schema import DEFAULT_LINE, Schema, available_lines, load_schema
from mblint.schema.source import find_bridge_source

ANCESTOR_ROOTS = 4


class Project:
    """Everything shared while resolving many recipes: module finders, parsed modules, one
    interpreter per schema line and import roots."""

    def __init__(
        self,
        search_paths: list[Path] | None = None,
        version: str | None = None,
        display_root: Path | None = None,
        confinement=None,
    ) -> None:
        self.search_paths = list(search_paths or [])
        self.confinement = confinement  # mblint.paths.Confinement: what may be read; None: anything
        self.hf_config_folders: list[Path] = []  # settings' hf-config-paths, read by every interpreter
        self.version = version
        self.display_root = display_root or Path.cwd()
        self._interpreters: dict[tuple, Interpreter] = {}
        self._interpreter_of: dict[tuple, Interpreter] = {}  # (path, version, search paths) -> interpreter
        self._roots: dict[Path, list[Path]] = {}
        self._package_roots: dict[Path, Path] = {}  # real folder -> _package_root()
        self._finders: dict[tuple, ModuleFinder] = {}  # import roots -> finder
        self._schemas: dict[tuple, Schema] = {}  # (roots, version, schema source) -> schema
        self.schema_source = "auto"  # "bundled": never derive from the source at hand
        self.schema_cache: Path | None = None  # where derived schemas are kept (None: the user cache)
        self._note: str | None = None  # what the schema being chosen needs said about it
        self.real_paths = RealPaths()
        self._texts: dict[Path, str] = {}  # read by line_for(), parsed by the finder (one read per file)

    def roots_for(self, path: Path) -> list[Path]:
        folder = path.parent
        cached = self._roots.get(folder)
        if cached is None:
            cached = self._compute_roots(path)
            self._roots[folder] = cached
        return cached

    def _compute_roots(self, path: Path) -> list[Path]:
        top = self._package_root(self.real_paths.of(path).parent)
        roots = [top]
        ancestor = top
        for _ in range(ANCESTOR_ROOTS):
            if ancestor.parent == ancestor:
                break
            ancestor = ancestor.parent  # a folder above a real path is real: not resolved again
            if self.confinement is not None and not self.confinement.allows(ancestor, real=ancestor):
                break
            roots.append(ancestor)
        return roots + self.search_paths + list(installed_megatron_roots())

    def _package_root(self, folder: Path) -> Path:
        """The folder above the top-level package of the files in ``folder`` (``folder`` itself
        for lone scripts), kept for each folder on the way up."""
        found = self._package_roots.get(folder)
        if found is None:
            is_package = (folder / "__init__.py").is_file() and folder.parent != folder
            found = self._package_roots[folder] = self._package_root(folder.parent) if is_package else folder
        return found

    def schema_for(self, path: Path, roots: list[Path]) -> Schema:
        """The schema a file is linted against: derived from the Megatron-Bridge source among
        its import roots when there is one (and ``schema_source`` allows it), else the bundled
        release of its version (the setting, the source's own, or guessed from the file)."""
        key = (tuple(roots), self.version, self.schema_source, _bridge_tree(path))
        found = self._schemas.get(key)
        if found is None:
            self._note = None
            schema = self._choose_schema(path, roots)
            found = self._schemas[key] = (schema, schema_record(schema, self._note))
        return found[0]

    def schema_record(self, path: Path) -> dict:
        """What the report says about the schema ``path`` is linted against: version, source,
        Megatron-Core version, and the notice its choice needed (or None)."""
        roots = self.roots_for(path)
        self.schema_for(path, roots)
        return self._schemas[(tuple(roots), self.version, self.schema_source, _bridge_tree(path))][1]

    def _choose_schema(self, path: Path, roots: list[Path]) -> Schema:
        source = find_bridge_source(roots, self.real_paths.of(path))
        if source is not None and self.confinement is not None and not self.confinement.allows(source.package):
            source = None  # a tree outside what this run may read
        version = self.version or (source.version if source else None)
        if source is not None and source.has_config and self.schema_source != "bundled":
            from mblint.schema.derive import DeriveError, derive_schema

            base = load_schema(version or DEFAULT_LINE)
            try:
                return derive_schema(source, base, version, self.schema_cache,
                                     parse=lambda file: self.finder_for(roots).load(file).tree)
            except DeriveError as error:
                self._note = (f"{source.package}: no schema derived from this Megatron-Bridge source "
                                         f"({error}); using the bundled {base.megatron_bridge_version} schema")
                return base
        if version is None:
            guess = detect_line_from_text(self._text_for_line(path))
            schema = load_schema(guess)
            self._note = (
                "Megatron-Bridge version unknown: no megatron/bridge source beside the linted files or on "
                f"search-paths and no megatron-bridge-version setting; linting against the nearest bundled "
                f"schema, {schema.megatron_bridge_version}")
            return schema
        schema = load_schema(version)
        if schema.megatron_bridge_version != version and version not in available_lines():
            why = "its source is not readable here" if source is None or not source.has_config \
                else "the schema source is set to bundled"
            self._note = (f"Megatron-Bridge {version} has no bundled schema and {why}; linting against the "
                          f"nearest bundled release, {schema.megatron_bridge_version}")
        return schema

    def _text_for_line(self, path: Path) -> str:
        """The file's text as its finder will read it, kept for the finder; read as before
        where the finder could not read it (or reads edited texts)."""
        if SOURCE_OVERLAY:
            return _safe_text(path)
        try:
            text = read_source(path)
        except SourceError:
            return _safe_text(path)
        self._texts[path] = text
        return text

    def interpreter_for(self, path: Path) -> Interpreter:
        """Asked several times per recipe; the answer only changes with the settings in force
        (schema line, search paths), which are part of the key."""
        key = (path, self.version, len(self.search_paths), self.schema_source)
        interp = self._interpreter_of.get(key)
        if interp is None:
            interp = self._interpreter_of[key] = self._find_interpreter(path)
        return interp

    def _find_interpreter(self, path: Path) -> Interpreter:
        roots = self.roots_for(path)
        schema = self.schema_for(path, roots)
        key = (tuple(roots), schema.key)
        interp = self._interpreters.get(key)
        if interp is None:
            interp = Interpreter(schema, self.finder_for(roots))
            interp.hf_config_folders = self.hf_config_folders
            self._interpreters[key] = interp
        return interp

    def finder_for(self, roots: list[Path]) -> ModuleFinder:
        """One finder per set of import roots: the modules a schema derivation parses are then
        parsed once, for it and for the interpreter (and, before the workers fork, for them)."""
        key = tuple(roots)
        finder = self._finders.get(key)
        if finder is None:
            finder = self._finders[key] = ModuleFinder(roots, self.display_root, self.real_paths, self._texts,
                                                       self.confinement)
        return finder

    def recipe_functions(self, path: Path) -> list[ast.FunctionDef]:
        interp = self.interpreter_for(path)
        source = interp.finder.load(path)
        return [node for node in source.tree.body if is_recipe_function(node)]

    def resolve_function(self, path: Path, function: str) -> EffectiveConfig | None:
        """The recipe's configuration, or None when the function does not build a
        ConfigContainer mblint can follow."""
        graph = self.resolve_graph(path, function)
        return graph.build() if graph is not None else None

    def resolve_graph(self, path: Path, function: str, kwargs: dict | None = None) -> "ResolvedRecipe | None":
        """``kwargs``: plain keyword arguments the recipe is called with (a launcher's
        ``peft_scheme``); else its defaults."""
        interp = self.interpreter_for(path)
        scope = interp.scope_for(path)
        func = scope.lookup(function)
        if not isinstance(func, FuncRef):
            raise LookupError(f"{path}: no function named {function!r}")
        interp.start_recipe()
        interp.result_unknown = False
        interp.gpu = gpu_of_recipe(function)
        try:
            result = interp.call_function(func, [], dict(kwargs), None) if kwargs else interp.call_recipe(func)
        except (BudgetExceeded, Return) as error:
            interp.notes.append(f"{function}: left unresolved ({type(error).__name__})")
            return None
        except RecursionError:
            interp.limit(f"{function}: Python recursion limit reached (nested too deeply): the recipe's values are unknown")
            return None
        interp.result_unknown = is_unknown(result)
        if not isinstance(result, Obj) or result.cls is None:
            return None
        if not interp.schema.is_subclass(result.cls.qualname, interp.schema.root_qualname):
            return None
        node = func.node
        source = scope.source
        column = source.char_column(node.lineno, node.col_offset)
        recipe = RecipeRef(source.display_path, function, node.lineno, column, node.lineno,
                           column + len(f"def {function}"), last_line=getattr(node, "end_lineno", 0) or 0)
        return ResolvedRecipe(result, recipe, interp, interp.gpu)


class ResolvedRecipe:
    """An interpreted recipe's object graph, to which overrides are applied before flattening."""

    def __init__(self, root: Obj, recipe: RecipeRef, interp: Interpreter, gpu: Gpu | None = None) -> None:
        self.root = root
        self.recipe = recipe
        self.interp = interp
        self.gpu = gpu
        self.ignored: list = []  # (field path, Override) that Megatron-Bridge would skip
        self.applied: list = []  # (field path, Override) for every override, in order
        self.overrides_applied = 0

    @property
    def schema(self) -> Schema:
        return self.interp.schema

    def build(self) -> EffectiveConfig:
        named = self.expand_named_mixed_precision()
        self.apply_provider_finalize()
        cfg = flatten(self.root, self.recipe, self.schema, list(self.interp.notes))
        cfg.mixed_precision_name = named
        cfg.ignored_overrides = [(path, o.origin, o.action, o.value) for path, o in self.ignored]
        cfg.applied_overrides = [(path, o.origin, o.action, o.value) for path, o in self.applied]
        cfg.overrides_applied = self.overrides_applied > 0
        cfg.attribute_errors = list(self.interp.attribute_errors)
        cfg.gaps = list(self.interp.gaps)
        cfg.gpu = self.gpu
        return cfg

    def expand_named_mixed_precision(self) -> str | None:
        """Megatron-Bridge replaces a recipe name in ``cfg.mixed_precision`` with the config
        its factory builds before it validates anything; so does mblint. The name is
        returned; the expanded fields are defaults located at the line that chose the name."""
        slot = self.root.fields.get("mixed_precision")
        if slot is None or not isinstance(slot[0], str):
            return None
        name, origins = slot
        expanded = self.interp.named_mixed_precision(name)
        if expanded is None:
            return None
        chosen_at = tuple(_with_kind(origin, "default") for origin in true_origins(origins, self.root.rebase)[-1:])
        fields = expanded.writable()
        for key, (value, _) in list(fields.items()):
            fields[key] = (value, chosen_at)
        expanded.rebase = ()  # its origins were all just replaced
        self.root.writable()["mixed_precision"] = (expanded, origins)
        return name


    def apply_provider_finalize(self) -> None:
        """The plain assignments a model provider's ``finalize()`` makes when
        ``ConfigContainer.validate()`` runs, after every recipe edit and override:
        ``PROVIDER_FINALIZE`` lists them per provider class, each with its condition and applied
        where the release's code has it (a schema check). An unknown condition makes the
        assigned field unknown. An AutoBridge model whose class is not known (no config.json
        at hand) may be any provider: a field of ``UNKNOWN_CLASS_MAY_SET`` that some provider's
        finalize() of this release would set under a condition that holds (or may) is unknown."""
        slot = self.root.fields.get("model")
        model = slot[0] if slot else None
        if type(model) is not Obj or model.cls is None:
            return
        class_known = not model.label
        effects = (finalize_assignments(self.schema, model.cls.qualname) if class_known
                   else possible_finalize_assignments(self.schema))
        for effect in effects:
            field, op, bound = effect["if"]
            current = model.get(field)
            if is_missing(current):
                continue
            # None compares as "not above": the finalize() code reads `(size or 1) > 1`
            condition = False if current is None else _COMPARE[op](current, bound) if _plain_int(current) else UNKNOWN
            if condition is False:
                continue
            cause = model.fields.get(field, (None, ()))[1][-1:]
            for name, value in effect["set"].items():
                if name not in model.fields:
                    continue
                current_value, previous = model.fields[name]
                if not class_known:
                    if _same(current_value, value):
                        continue  # whatever the class, the field ends with this value
                    value = Unknown("set by the finalize() of some providers; the model's class is not known")
                elif condition is not True:
                    value = Unknown("set by the provider's finalize()")
                model.writable()[name] = (value, previous + tuple(_with_kind(origin, "default") for origin in cause))


# Plain assignments of providers' finalize() (run by ConfigContainer.validate() after every recipe
# edit and override), each applied where the release's code has it (schema check): 0.6.2
# megatron/bridge/models/qwen_vl/qwen3_vl_provider.py:137-140, :302-307, qwen35_vl_provider.py:206-209,
# :396-399; 0.3.1 qwen3_vl_provider.py:247-250.
PROVIDER_FINALIZE = (
    ("Qwen3VLMoEModelProvider", "qwen3_vl_moe_finalize_forces_sp",
     {"if": ("tensor_model_parallel_size", ">", 1), "set": {"sequence_parallel": True}}),
    ("Qwen3VLModelProvider", "qwen_vl_finalize_per_token_loss_with_cp",
     {"if": ("context_parallel_size", ">", 1), "set": {"calculate_per_token_loss": True}}),
    ("Qwen3VLMoEModelProvider", "qwen_vl_finalize_per_token_loss_with_cp",
     {"if": ("context_parallel_size", ">", 1), "set": {"calculate_per_token_loss": True}}),
    ("Qwen35VLModelProvider", "qwen_vl_finalize_per_token_loss_with_cp",
     {"if": ("context_parallel_size", ">", 1), "set": {"calculate_per_token_loss": True}}),
    ("Qwen35VLMoEModelProvider", "qwen_vl_finalize_per_token_loss_with_cp",
     {"if": ("context_parallel_size", ">", 1), "set": {"calculate_per_token_loss": True}}),
)


@lru_cache(maxsize=64)  # a run has a schema or two; a test process makes many
def finalize_assignments(schema: Schema, qualname: str) -> tuple[dict, ...]:
    """The effects of ``PROVIDER_FINALIZE`` that apply to the provider class ``qualname``: the
    same for every configuration of a class (kept per schema and class)."""
    return tuple(effect for owner, check, effect in PROVIDER_FINALIZE
                 if schema.has_check(check) and schema.is_subclass(qualname, owner))


# The fields an AutoBridge model of unknown class (no config.json at hand) has unknown when some
# provider's finalize() in the release would set them (issue 24: PB010 on 0.6.2's
# qwen3_vl_235b_a22b_sft_32gpu_h100_bf16_config). calculate_per_token_loss (Qwen-VL providers,
# CP > 1) is the same case but left known: making it unknown silences CP002, an error, on every
# AutoBridge fine-tuning recipe with CP > 1 without its config.json; a decision for the lead.
UNKNOWN_CLASS_MAY_SET = ("sequence_parallel",)


@lru_cache(maxsize=16)
def possible_finalize_assignments(schema: Schema) -> tuple[dict, ...]:
    """The effects on ``UNKNOWN_CLASS_MAY_SET`` some provider class of the release has (its
    code has the check), each once; kept per schema (asked for every AutoBridge model)."""
    found = []
    for _, check, effect in PROVIDER_FINALIZE:
        if schema.has_check(check) and effect not in found and set(effect["set"]) <= set(UNKNOWN_CLASS_MAY_SET):
            found.append(effect)
    return tuple(found)


def _same(current: Any, value: Any) -> bool:
    return type(current) is type(value) and current == value


def _plain_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


_COMPARE = {">": lambda a, b: a > b, ">=": lambda a, b: a >= b, "==": lambda a, b: a == b}
_MISSING = object()


class _ViewAnswers(dict):
    """Answers of a ``GraphView`` question by path: a known answer is a dict look-up in C;
    a subclass's ``__missing__`` works out one not asked before. They hold the view's graph
    and walk memo, not the view: the view holds them, and a reference cycle would keep every
    configuration's graph and answers until the run ends (the cyclic collector is off)."""

    __slots__ = ("root", "memo")

    def __init__(self, root: Obj, memo: dict) -> None:
        super().__init__()
        self.root = root
        self.memo = memo


class _Answers(_ViewAnswers):
    """``GraphView.lookup`` answers by path (an answer is kept unless it is a list, which a
    caller may change)."""

    __slots__ = ()

    def __missing__(self, path: str) -> Any:
        # _walk_to's usual case inlined: a field of an object already walked. The walk memo
        # keeps the field only if it is an object (a parent of later paths): few leaves are
        # asked both for their value and their origins.
        parent, leaf = _SPLITS.get(path) or _split(path)
        above = self.memo.get(parent) if parent else None
        node = above[0] if above is not None else None
        if type(node) is Obj:
            found = node.fields.get(leaf) or _missing_field(node, leaf)
        else:
            found = _walk_to(self.root, self.memo, path)
        value = found[0]
        if type(value) in _AS_IS:
            self[path] = value
            return value
        if type(value) is Obj:
            self.memo[path] = found
            found = _NodeMarker(value.type_name)
        else:
            found = _plain(_held_as(_holder(self.root, self.memo, path), leaf, value))
            if isinstance(found, list):
                return found
        self[path] = found
        return found


class _TypeAnswers(_ViewAnswers):
    """``GraphView.type_of`` answers by path, worked out on first use (as ``_Answers``)."""

    __slots__ = ()

    def __missing__(self, path: str) -> str | None:
        value = _walk_to(self.root, self.memo, path)[0]
        found = self[path] = value.type_name if isinstance(value, Obj) else None
        return found


class _OriginAnswers(_ViewAnswers):
    """``GraphView.origins`` answers by path, worked out on first use (as ``_Answers``)."""

    __slots__ = ()

    def __missing__(self, path: str) -> tuple:
        origins = _walk_to(self.root, self.memo, path)[1]
        if origins:
            rebase = _rebase_at(self.root, self.memo, path)
            if rebase:
                origins = true_origins(origins, rebase)
        found = self[path] = tuple(origins)
        return found


def _rebase_at(root: Obj, memo: dict, path: str) -> tuple:
    """How the origins stored at ``path`` read now: the ``Obj.rebase`` of the object holding
    them (``path`` already walked)."""
    parent = (_SPLITS.get(path) or _split(path))[0]
    if parent:
        holder = (memo.get(parent) or _walk_to(root, memo, parent))[0]
    else:  # no parent to step from: walked from the root
        holder = (root, ())
        for part in path.split(".")[:-1]:
            holder = _step(holder[0], part)
        holder = holder[0]
    return holder.rebase if type(holder) is Obj else ()


def _holder(root: Obj, memo: dict, path: str) -> Any:
    """The object holding the field at ``path`` (``path`` already walked)."""
    parent = (_SPLITS.get(path) or _split(path))[0]
    if not parent:
        return root if "." not in path else None
    return (memo.get(parent) or _walk_to(root, memo, parent))[0]


def _walk_to(root: Obj, memo: dict, path: str) -> tuple[Any, tuple]:
    """(value, origins) at ``path`` below ``root``; value may be an Obj, ABSENT or UNKNOWN.
    Rules only read a built configuration, so answers are kept in ``memo``; a path is one
    step from its parent's (kept) answer, since rules read many fields of one node."""
    found = memo.get(path)
    if found is not None:
        return found
    split = _SPLITS.get(path) or _split(path)
    if split[0]:
        parent, leaf = split
        node = (memo.get(parent) or _walk_to(root, memo, parent))[0]
        if isinstance(node, Obj):
            found = node.fields.get(leaf)
            if found is None:
                found = _missing_field(node, leaf)
        else:
            found = _BELOW_UNKNOWN if isinstance(node, Unknown) else _BELOW_ABSENT
    else:
        found = (root, ())
        for part in path.split(".") if path else ():
            found = _step(found[0], part)
    memo[path] = found
    return found


class GraphView:
    """Answers field look-ups on an interpreted object graph, flattening it only on demand."""

    def __init__(self, root: Obj) -> None:
        self.root = root
        self._memo: dict[str, tuple[Any, tuple]] = {}
        # Answers by path, worked out on first use: ``lookup``, ``type_of`` and ``origins`` read
        # them; ``EffectiveConfig`` indexes them directly (rules make ~150k look-ups a run).
        self.value_answers = _Answers(root, self._memo)
        self.type_answers = _TypeAnswers(root, self._memo)
        self.origin_answers = _OriginAnswers(root, self._memo)

    def _walk_to(self, path: str) -> tuple[Any, tuple]:
        return _walk_to(self.root, self._memo, path)

    def lookup(self, path: str) -> Any:
        return self.value_answers[path]

    def field(self, path: str) -> ResolvedField | None:
        value, origins = self._walk_to(path)
        if isinstance(value, Obj) or value is ABSENT or not path:
            return None
        if isinstance(value, Unknown) and not origins:
            return None
        leaf = (_SPLITS.get(path) or _split(path))[1]
        return ResolvedField(path, _plain(_held_as(_holder(self.root, self._memo, path), leaf, value)),
                             self.origins(path))

    def origins(self, path: str) -> tuple:
        """Origins of a leaf, or of an object node (where the object was assigned)."""
        return self.origin_answers[path]

    def last_kind(self, path: str) -> str | None:
        """``origins(path)[-1].kind``, read as stored: a rebase changes no origin's kind."""
        origins = self._walk_to(path)[1]
        return origins[-1].kind if origins else None

    def last_origin(self, path: str) -> Origin | None:
        """``origins(path)[-1]``, the others left as stored."""
        origins = self.origin_answers.get(path)
        if origins is not None:
            return origins[-1] if origins else None
        origins = self._walk_to(path)[1]
        if not origins:
            return None
        origin = origins[-1]
        for step in _rebase_at(self.root, self._memo, path):
            origin = step.origin(origin)
        return origin

    def type_of(self, path: str) -> str | None:
        """Class name of the object node at ``path``; None when it is no object."""
        return self.type_answers[path]

    def keys(self, path: str) -> list[str]:
        """The keys (or field names) directly below an object node."""
        node, _ = self._walk_to(path)
        return [str(key) for key in node.fields] if isinstance(node, Obj) else []

    def child_types(self, path: str) -> dict[str, str]:
        """The class name of each object below the node at ``path``, by key (its keys that hold
        objects, which the object keeps listed)."""
        node, _ = self._walk_to(path)
        if not isinstance(node, Obj):
            return {}
        fields = node.fields
        return {str(key): fields[key][0].type_name for key in node.child_keys()}

    def keys_outside(self, path: str, names: frozenset[str]) -> list[str]:
        """``keys(path)`` not in ``names``, in order; most tables have none, which one
        ``issuperset`` (in C, no set built) tells."""
        node, _ = self._walk_to(path)
        if not isinstance(node, Obj) or names.issuperset(node.fields):
            return []
        return [text for text in map(str, node.fields) if text not in names]

    def extra_fields(self) -> list[str]:
        """Paths of attributes set on config objects whose class has no such field (objects
        with unknown extra fields, and everything below them, are skipped)."""
        found: list[str] = []
        if not self.root.open:
            _collect_extra(self.root, "", set(), found)
        return found

    def flatten(self) -> tuple[dict, dict, frozenset]:
        fields: dict[str, ResolvedField] = {}
        types: dict[str, str] = {"": self.root.type_name}
        open_dicts: set[str] = set()
        for path, value, origins in _walk(self.root, "", types, open_dicts, set()):
            fields[path] = ResolvedField(path, _plain(value), origins)
        return fields, types, frozenset(open_dicts)


_SCALARS = frozenset({str, int, float, bool, type(None)})
_AS_IS = _SCALARS | {Unknown, type(ABSENT)}  # value types that are their own answer (ABSENT is the only _Absent)
_BELOW_UNKNOWN = (UNKNOWN, ())
_BELOW_ABSENT = (ABSENT, ())


_SPLITS: dict[str, tuple[str, str]] = {}


def _split(path: str) -> tuple[str, str]:
    """(parent, leaf) of a dotted path, kept: rules ask for the same paths in every
    configuration. The parent is "" when the path has no parent to step from."""
    parent, dot, leaf = path.rpartition(".")
    split = (parent, leaf) if dot and parent else ("", path)
    if len(_SPLITS) < 100_000:
        _SPLITS[path] = split
    return split


_MARKED: dict[int, tuple] = {}  # id(field table) -> (table, class, marked keys)
# An entry keeps its table, and the objects below it, alive: configurations done with stay
# until the next clear (4096 entries kept ~8 MB of them on 0.6.2; 512 costs +0.1 % instructions).
MAX_MARKED = 512


def forget_configurations() -> None:
    """Let the configurations checked so far go (a process that checks again and again calls it
    between checks: ``mblint server``); ``_MARKED`` keeps the last ones alive until it is full."""
    _MARKED.clear()


def _collect_extra(obj: Obj, prefix: str, active: set, found: list[str]) -> None:
    """``extra_fields`` below the closed object ``obj`` at ``prefix``, in field order. A table
    whose keys its class declares (or a dict's) holds no extra key: its objects are entered
    without ``_marked_keys``, and none that is a childless such table (most are)."""
    fields = obj.fields
    if obj.declared is fields or obj.cls is None:
        children = obj._children
        keys = children[1] if children is not None and children[0] is fields else obj.child_keys()
        marked = zip(keys, repeat(False))
    else:
        marked = keys = _marked_keys(obj)
    if not keys:
        return
    active.add(obj.oid)
    for key, is_extra in marked:
        if is_extra:
            found.append(f"{prefix}.{key}" if prefix else str(key))
            continue
        child = fields[key][0]
        if child.open or child.oid in active:
            continue
        table = child.fields
        children = child._children
        if children is not None and children[0] is table and not children[1] \
                and (child.declared is table or child.cls is None):
            continue
        _collect_extra(child, f"{prefix}.{key}" if prefix else str(key), active, found)
    active.discard(obj.oid)


def _marked_keys(obj: Obj) -> tuple:
    """(key, True) for each key of ``obj`` that its class does not declare, (key, False) for
    each other key holding an object, in field order. Kept per field table: configurations
    share most tables (copy on write). The table is frozen (shared), so that a write copies it
    first, and kept in the memo, so that its id is not reused while the answer is there."""
    fields = obj.fields
    entry = _MARKED.get(id(fields))
    if entry is not None and entry[0] is fields and entry[1] is obj.cls:
        return entry[2]
    names = obj.cls.fields if obj.cls is not None else None
    if names is not None and obj.declared is not fields and not fields.keys() <= names.keys():
        children = set(obj.child_keys())
        marked = tuple((key, key not in names) for key in fields if key not in names or key in children)
    else:
        marked = tuple((key, False) for key in obj.child_keys())
    obj.shared = True
    if len(_MARKED) >= MAX_MARKED:
        _MARKED.clear()
    _MARKED[id(fields)] = (fields, obj.cls, marked)
    return marked


def _step(current: Any, part: str) -> tuple[Any, tuple]:
    """(value, origins) of field or key ``part`` of ``current``."""
    if not isinstance(current, Obj):
        return _BELOW_UNKNOWN if isinstance(current, Unknown) else _BELOW_ABSENT
    slot = current.fields.get(part)
    return slot if slot is not None else _missing_field(current, part)


def _missing_field(node: Obj, part: str) -> tuple[Any, tuple]:
    """(value, origins) of ``part`` when ``node`` has no field by that exact name: a dict
    may hold it under a non-string key (``{1: ...}`` read as ``"1"``)."""
    if node.is_dict:
        slot = next((v for k, v in node.fields.items() if str(k) == part), None)
        if slot is not None:
            return slot
    return _BELOW_UNKNOWN if node.open else _BELOW_ABSENT


def flatten(root: Obj, recipe: RecipeRef, schema: Schema, notes: list[str] | None = None) -> EffectiveConfig:
    return EffectiveConfig(recipe, schema.key, notes=notes or [], graph=GraphView(root), schema=schema)


def _walk(obj: Obj, prefix: str, types: dict, open_dicts: set, active: set) -> Iterator[tuple]:
    if obj.oid in active:
        return
    active.add(obj.oid)
    if obj.open and (obj.is_dict or prefix):
        open_dicts.add(prefix)
    rebase = obj.rebase
    for key, (value, origins) in obj.fields.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Obj):
            types[path] = value.type_name
            yield from _walk(value, path, types, open_dicts, active)
        else:
            yield path, _held_as(obj, key, value), true_origins(origins, rebase) if rebase else origins
    active.discard(obj.oid)


def _plain(value: Any) -> Any:
    if isinstance(value, Unknown):
        return value
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        items = [_plain(item) for item in value]
        if any(isinstance(item, Unknown) for item in items):
            return UNKNOWN
        return items if isinstance(value, list) else tuple(items)
    if isinstance(value, set):
        return _plain(sorted(value, key=repr))
    if isinstance(value, NamedObject):
        return value
    if isinstance(value, FuncRef):
        return _defined_function(value)
    return UNKNOWN


def _held_as(holder: Any, key: Any, value: Any) -> Any:
    """``value`` as the field ``key`` of ``holder`` holds it. A name imported from a module
    mblint does not read may be anything (a constant, a class): in a field whose type is a
    callable it is the object of that name, elsewhere unknown."""
    if type(value) is not External or type(holder) is not Obj or holder.cls is None:
        return value
    spec = holder.cls.fields.get(key)
    if spec is None or "Callable" not in spec.annotation:
        return value
    qualname = value.qualname
    if qualname.startswith("<") or "." not in qualname or qualname.split(".", 1)[0] in _PROCESS_STATE_MODULES:
        return value
    return NamedObject(qualname)


# Modules whose objects hold the process's state (``os.environ``, ``sys.argv``).
_PROCESS_STATE_MODULES = frozenset({"os", "sys"})


def _defined_function(value: FuncRef) -> Any:
    """A function defined at a module's top level as the ``NamedObject`` a field holding it
    has; UNKNOWN for one defined in a function (each call makes another, with its own
    closure)."""
    module = value.module
    if not any(stmt is value.node for stmt in module.source.tree.body):
        return UNKNOWN
    name = module.dotted_name()
    return NamedObject(f"{name}.{value.name}") if name else UNKNOWN


def is_recipe_function(node: ast.stmt) -> bool:
    if not isinstance(node, ast.FunctionDef) or node.name.startswith("_"):
        return False
    return node.name.endswith("_config") or _annotation_text(node.returns).endswith("ConfigContainer")


def _annotation_text(node: ast.expr | None) -> str:
    """``ast.unparse(node)``, or as much of its end as tells how it ends (a name, or the last
    attribute of a dotted name)."""
    if node is None:
        return ""
    kind = type(node)
    if kind is ast.Name:
        return node.id
    if kind is ast.Attribute:
        return node.attr
    return ast.unparse(node)


def _bridge_tree(path: Path) -> str | None:
    """The part of ``path`` up to ``megatron/bridge`` when the file is inside one (the schema
    then comes from that tree whatever the import roots are), else None."""
    text = path.as_posix()
    cut = text.rfind("/megatron/bridge/")
    return text[:cut] if cut >= 0 else None


def schema_record(schema: Schema, note: str | None) -> dict:
    return {"megatron_bridge_version": schema.megatron_bridge_version, "source": schema.source,
            "megatron_core_version": schema.megatron_core_version, "note": note}


def detect_line_from_text(text: str) -> str:
    if "packed_sequence_specs" in text and "offline_packing_specs" not in text:
        return "0.3"
    return "0.6"


def _safe_text(path: Path) -> str:
    """The text of a file the finder could not read, for the schema line's hints: never read
    past the size limit (a 1.5 GB recipe is not read at all), never a FIFO or device."""
    try:
        return read_regular(path, MAX_SOURCE_BYTES).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return ""


def resolve(
    path: Path,
    function: str,
    *,
    search_paths: list[Path],
    version: str | None,
    override_files: list[Path],
    dotlist: list[str],
) -> EffectiveConfig:
    from mblint.overrides import apply_dotlist, apply_yaml_file

    project = Project(search_paths, version)
    resolved = project.resolve_graph(path, function)
    if resolved is None:
        raise SourceError(path, f"{function} does not build a ConfigContainer mblint can follow")
    for override in override_files:
        apply_yaml_file(resolved, override)
    if dotlist:
        apply_dotlist(resolved, dotlist, source="--set")
    return resolved.build()
