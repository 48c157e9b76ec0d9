"""Calls: of functions mblint reads (memoized), of methods, of constructors and of what it cannot
follow.
"""

from __future__ import annotations

import ast
from typing import Any

from mblint import coverage
from mblint.extract.hf_models import BridgeInstance
from mblint.extract.limits import MAX_CALL_DEPTH, MAX_STEPS, MAX_UNUSED_RECIPE_RESULTS
from mblint.extract.modules import ModuleSource
from mblint.extract.python_builtins import _PLAIN_TYPES, _external_builtin, _known_seq, _string_method
from mblint.extract.scopes import Frame
from mblint.extract.values import (
    BoundMethod,
    ClassRef,
    DeviceName,
    External,
    FuncRef,
    HFBridge,
    Obj,
    Rebase,
    is_missing,
    is_unknown,
    merge_values,
)
from mblint.model import UNKNOWN, Origin


class CallSite:
    """A call the interpreter went through (``Origin.via``). Its position is worked out only
    when a finding is reported through it."""

    __slots__ = ("source", "node", "_origin")

    def __init__(self, source: ModuleSource, node: ast.AST) -> None:
        self.source = source
        self.node = node
        self._origin: Origin | None = None

    def origin(self) -> Origin:
        if self._origin is None:
            node, source = self.node, self.source
            end_line = getattr(node, "end_lineno", None) or node.lineno
            self._origin = Origin(source.display_path, node.lineno, source.char_column(node.lineno, node.col_offset),
                                  end_line, source.char_column(end_line, getattr(node, "end_col_offset", None)
                                                               or node.col_offset))
        return self._origin


class _CallTrace:
    """What a memoized call did besides returning its result: the clock before and after it
    (its origins' ``seq`` lie between), the call chain it was made through, and the notes and
    attribute errors it recorded."""

    __slots__ = ("low", "high", "entry", "notes", "attribute_errors", "gaps")

    def __init__(self, low: int, high: int, entry: tuple, notes: list, attribute_errors: list, gaps: list) -> None:
        self.low = low
        self.high = high
        self.entry = entry
        self.notes = notes
        self.attribute_errors = attribute_errors
        self.gaps = gaps


class CallsMixin:
    """Function calls (memoized results, arguments, returns) and method calls. Part of ``Interpreter``."""

    def call_recipe(self, func: FuncRef) -> Any:
        """The result of a recipe function that mblint calls. Memoized as any call's, but
        dropped from the memo when ``MAX_UNUSED_RECIPE_RESULTS`` later ones are kept unused."""
        key = self.memo_key(func, [], {})
        new = key is not None and key not in self.memo
        result = self.call_function(func, [], {}, None)
        key = self.memo_key(func, [], {})  # with the GPU if the call turned out to read it
        if new and key in self.memo:
            unused = self.unused_recipe_results
            unused[key] = None
            if len(unused) > MAX_UNUSED_RECIPE_RESULTS:
                oldest = next(iter(unused))
                del unused[oldest]
                del self.memo[oldest]
        return result

    def call_function(self, func: FuncRef, args: list, kwargs: dict, site: ast.AST | None) -> Any:
        key = self.memo_key(func, args, kwargs)
        if key is not None and key in self.memo:
            self.unused_recipe_results.pop(key, None)
            if len(key) > 3:  # a result that depends on the GPU: so does the caller's
                self.gpu_reads += 1
            return self.reuse(*self.memo[key])
        hits, gpu_reads = self.limit_hits, self.gpu_reads
        start, notes, errors, gaps = self.clock, len(self.notes), len(self.attribute_errors), len(self.gaps)
        entry = self.call_sites
        result = self.call_function_uncached(func, args, kwargs, site)
        if key is not None and self.gpu_reads != gpu_reads and len(key) == 3:
            self.gpu_dependent.add(key)
            key += (self.gpu,)
        # A result cut short by a limit depends on the calls around it: not reused.
        if key is not None and self.call_stack_clean() and self.limit_hits == hits:
            trace = _CallTrace(start, self.clock, entry, self.notes[notes:], self.attribute_errors[errors:],
                               self.gaps[gaps:])
            self.remember(key, result, trace)
        return result

    def memo_key(self, func: FuncRef, args: list, kwargs: dict) -> tuple | None:
        """Calls whose arguments are all plain scalars cannot touch the caller's objects, and
        module-level objects are copied on read: their results can be reused."""
        if self.havoc_depth:
            return None
        for value in args:
            if type(value) not in _PLAIN_TYPES:
                return None
        for value in kwargs.values():
            if type(value) not in _PLAIN_TYPES:
                return None
        key = (id(func.node), tuple(args), tuple(sorted(kwargs.items())))
        return key + (self.gpu,) if key in self.gpu_dependent else key

    def call_stack_clean(self) -> bool:
        return self.steps < MAX_STEPS and not self.budget_hit

    def remember(self, key: tuple, result: Any, trace: "_CallTrace") -> None:
        """Memoize a result that this call hands out as it is: later calls get copies of the
        state it is in now. The copy this call once handed out instead is still charged."""
        try:
            frozen = self.freeze_result(result)
        except RecursionError:  # too deep, as copying it was: not handed out, copied as it is
            self.memo[key] = (result, None, trace)
            raise
        self.memo[key] = (result, frozen, trace)
        self.charge_first_copy(frozen)

    def reuse(self, result: Any, frozen: dict | None, trace: "_CallTrace") -> Any:
        """A memoized call's result (a copy), with all the call left behind, as if the call
        were made now: its origins numbered from now on and reached through the current call
        chain, its notes and attribute errors recorded again."""
        self.notes.extend(trace.notes)
        rebase = Rebase(trace.low, trace.high, self.clock - trace.low, trace.entry, self.call_sites)
        self.clock += trace.high - trace.low
        for origin, *rest in trace.attribute_errors:
            self.attribute_errors.append((rebase.origin(origin), *rest))
        for gap in trace.gaps:
            self.gaps.append(gap._replace(origin=rebase.origin(gap.origin)))
        return self.copy_result(result, frozen, rebase)

    def freeze_result(self, value: Any) -> dict:
        """The states of a result's objects, by oid in the order ``copy_obj`` copies them:
        (field table, open, ``_children``, ``declared``, ``rebase``). The tables are marked
        shared: never written."""
        states: dict = {}
        if isinstance(value, Obj):
            value.freeze_into(states)
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Obj):
                    item.freeze_into(states)
        return states

    def charge_first_copy(self, frozen: dict) -> None:
        """The steps of a copy of a frozen result, and its objects counted as snapshots count
        ``objects``, as when the first call got a copy too (the step budget is unchanged)."""
        for fields, _, _, _, _ in frozen.values():
            size = len(fields)
            if size >= 100:
                self.charge(size)
            self.uncopied += 1

    def copy_result(self, value: Any, frozen: dict | None, rebase: Rebase) -> Any:
        memo: dict = {}
        if isinstance(value, Obj):
            return self.copy_obj(value, memo, frozen, rebase)
        if isinstance(value, tuple) and any(isinstance(v, Obj) for v in value):
            return tuple(self.copy_obj(v, memo, frozen, rebase) if isinstance(v, Obj) else v for v in value)
        return value

    def call_function_uncached(self, func: FuncRef, args: list, kwargs: dict, site: ast.AST | None) -> Any:
        recursive = func.node in self.call_stack  # ast nodes compare by identity
        if recursive or len(self.call_stack) >= MAX_CALL_DEPTH:
            if recursive:
                self.limit(f"{self.where}: recursive call of {func.name}: its result is unknown")
            else:
                self.limit(f"{self.where}: call depth limit ({MAX_CALL_DEPTH} nested calls) reached at "
                           f"{func.name}: its result is unknown")
            self.havoc_values(args + list(kwargs.values()), None, None)
            return UNKNOWN
        frame = Frame(func.module, function=func.name)
        self.bind_arguments(func, args, kwargs, frame)
        self.call_stack.append(func.node)
        try:
            completed = self.exec_block(func.node.body, frame)
        finally:
            self.call_stack.pop()
        if completed:
            frame.returns.append((None, self.snapshot(frame)))
        return self.finish_returns(frame)

    def finish_returns(self, frame: Frame) -> Any:
        if not frame.returns:
            return UNKNOWN
        value, snap = frame.returns[0]
        self.restore(snap, frame)
        for other_value, other_snap in frame.returns[1:]:
            self.merge_into_current(other_snap, frame)
            value = merge_values(value, other_value)
        return value

    def bind_arguments(self, func: FuncRef, args: list, kwargs: dict, frame: Frame) -> None:
        spec = func.node.args
        positional = spec.posonlyargs + spec.args
        defaults = [None] * (len(positional) - len(spec.defaults)) + list(spec.defaults)
        default_frame = None  # where defaults are evaluated: made for the first one
        for index, (param, default) in enumerate(zip(positional, defaults)):
            if index < len(args):
                value = args[index]
            elif param.arg in kwargs:
                value = kwargs.pop(param.arg)
            elif default is not None:
                default_frame = default_frame or Frame(func.module)
                value = self.eval(default, default_frame)
            else:
                value = UNKNOWN
            frame.locals[param.arg] = value
        if spec.vararg:
            extra = args[len(positional):]
            frame.locals[spec.vararg.arg] = tuple(extra) if _known_seq(extra) else UNKNOWN
        for param, default in zip(spec.kwonlyargs, spec.kw_defaults):
            if param.arg in kwargs:
                frame.locals[param.arg] = kwargs.pop(param.arg)
            elif default is not None:
                default_frame = default_frame or Frame(func.module)
                frame.locals[param.arg] = self.eval(default, default_frame)
            else:
                frame.locals[param.arg] = UNKNOWN
        if spec.kwarg:
            frame.locals[spec.kwarg.arg] = self.dict_from(kwargs, None)

    def call(self, func: Any, args: list, kwargs: dict, node: ast.AST, frame: Frame, kw_origins: dict) -> Any:
        if isinstance(func, FuncRef) and self.is_mixed_precision_lookup(func, args, kwargs):
            named = self.named_mixed_precision(args[0])
            return named if named is not None else UNKNOWN
        if isinstance(func, FuncRef):
            outer = self.call_sites
            self.call_sites = outer + (CallSite(frame.scope.source, node),)
            try:
                return self.call_function(func, args, dict(kwargs), node)
            finally:
                self.call_sites = outer
        if isinstance(func, ClassRef):
            return self.construct(func.spec, args, kwargs, node, frame, kw_origins)
        if isinstance(func, BoundMethod):
            return self.call_method(func, args, kwargs, node, frame)
        if isinstance(func, External):
            return self.call_external(func, args, kwargs, node, frame, kw_origins)
        return self.unmodelled_call(func, args, kwargs, node, frame)

    def unmodelled_call(self, func: Any, args: list, kwargs: dict, node: ast.AST, frame: Frame,
                        method_of: Any = None) -> Any:
        """A call mblint cannot follow: the objects it receives (``method_of``: the object whose
        method it is) become unknown, and handing it a configuration object is a gap."""
        values = [*args, *kwargs.values()]
        handed = [index for index, value in enumerate(values) if _config_object(value)]
        if isinstance(method_of, Obj):
            values.append(method_of)
            if _config_object(method_of):
                handed.append(-1)
        if handed and isinstance(node, ast.Call) and frame is not None:
            self.record_unfollowed_call(node, handed, frame, isinstance(func, External))
        self.havoc_values(values, node, frame)
        return UNKNOWN

    def record_unfollowed_call(self, node: ast.Call, handed: list[int], frame: Frame, unread: bool) -> None:
        name = coverage.root_name(node.func)
        imported = coverage.import_of(name, frame.scope.source.tree) if name else ""
        if imported and unread:
            imported += ", a module mblint does not read"
        gap = coverage.unfollowed_call(node, handed, imported)
        self.gaps.append(gap._replace(origin=self.origin(node, frame)))

    def call_external(self, func: External, args: list, kwargs: dict, node: ast.AST, frame: Frame, kw_origins: dict) -> Any:
        qualname = func.qualname
        pure, special = _external_builtin(qualname)
        if pure is not None:
            return pure(args, kwargs)
        if special is not None:
            return special(self, args, kwargs, node, frame)
        tail = ".".join(qualname.rsplit(".", 2)[-2:])
        if tail in self.hf_factories:
            return HFBridge(args[0] if args else kwargs.get("hf_path", UNKNOWN), kwargs.get("revision"))
        precision = self.unread_precision_factory(qualname, args, kwargs)
        if precision is not None:
            result = self.new_obj(precision, self.origin(node, frame))
            result.open = True  # fields unknown until the recipe sets them
            return result
        return self.unmodelled_call(func, args, kwargs, node, frame)

    def call_method(self, method: BoundMethod, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
        target, name = method.target, method.name
        if isinstance(target, HFBridge) and name in self.hf_methods:
            return self.hf_provider(node, frame, target.model_id, target.revision, kwargs)
        if isinstance(target, BridgeInstance):
            return self.bridge_call(target, name, args, kwargs, node, frame)
        if isinstance(target, ClassRef):
            if name in self.hf_factories_names():
                return HFBridge(args[0] if args else kwargs.get("hf_path", UNKNOWN), kwargs.get("revision"))
            return self.unmodelled_call(method, args, kwargs, node, frame)
        if isinstance(target, str):
            return _string_method(target, name, args, kwargs)
        if isinstance(target, DeviceName):
            return _device_name_method(target, name, args, kwargs)
        if isinstance(target, Obj) and target.is_dict:
            return self.dict_method(target, name, args, kwargs, node, frame)
        entry = self.self_preserving.get(target.cls.qualname, {}).get(name) \
            if isinstance(target, Obj) and target.label is None else None
        if entry is not None:
            return self.self_preserving_call(target, entry, args, kwargs, node, frame, method)
        return self.unmodelled_call(method, args, kwargs, node, frame, method_of=target)

    def self_preserving_call(self, target: Obj, entry: dict, args: list, kwargs: dict, node: ast.AST, frame: Frame,
                             method: BoundMethod) -> Any:
        """A method of a config object that cannot change it (schema fact
        ``self_preserving_methods``): the object stays as it is. A method that returns
        ``dataclasses.replace(self, field=parameter...)`` gives a copy of the object with those
        fields (its other fields are the same objects, as replace() shares them); any other
        result is unknown, and the other arguments are handled as in any call mblint cannot follow."""
        replaced = entry.get("replace")
        fields = target.cls.fields
        if replaced is None or not all(field in fields and fields[field].init for field in replaced):
            return self.unmodelled_call(method, args, kwargs, node, frame)
        params = entry.get("params", [])
        given = dict(zip(params, args))
        if len(args) > len(params) or set(given) & set(kwargs) or set(kwargs) - set(replaced.values()):
            return self.unmodelled_call(method, args, kwargs, node, frame)  # raises TypeError when run
        given.update(kwargs)
        origin = self.origin(node, frame)
        declared = target.declared is target.fields
        result = target.twin()
        self.objects.append(result)
        for field, param in replaced.items():
            result.set(field, given.get(param, UNKNOWN), origin)
        self.rerun_constructor(result, origin)
        result.declared = result.fields if declared else None
        return result

    def dict_method(self, target: Obj, name: str, args: list, kwargs: dict, node: ast.AST, frame: Frame) -> Any:
        origin = self.origin(node, frame)
        if name == "get" and args and not is_unknown(args[0]) and not isinstance(args[0], Obj):
            value = target.get(args[0])
            if is_missing(value):
                return args[1] if len(args) > 1 else None
            return value
        if name in ("update", "setdefault") and not self.havoc_depth:
            if name == "update" and args and isinstance(args[0], Obj) and args[0].is_dict:
                for key, (value, _) in args[0].fields.items():
                    target.set(key, value, origin)
                if args[0].open:
                    target.mark_open()
                for key, value in kwargs.items():
                    target.set(key, value, origin)
                return None
            if name == "update" and not args:
                for key, value in kwargs.items():
                    target.set(key, value, origin)
                return None
            if name == "setdefault" and args and not is_unknown(args[0]):
                current = target.get(args[0])
                if is_missing(current):
                    value = args[1] if len(args) > 1 else None
                    target.set(args[0], value, origin)
                    return value
                return current
        if name == "copy":
            copy = self.new_obj(None, origin)
            self.splat_into(copy, target)
            return copy
        if name in ("keys", "values", "items") and not target.open:
            if name == "keys":
                return list(target.fields)
            if name == "values":
                return [slot[0] for slot in target.fields.values()]
            return [(key, slot[0]) for key, slot in target.fields.items()]
        if name == "pop" and args and not is_unknown(args[0]) and not self.havoc_depth:
            slot = target.writable().pop(args[0], None)
            if slot is None:
                return args[1] if len(args) > 1 else UNKNOWN
            return slot[0]
        self.havoc_obj(target, origin)
        return UNKNOWN


def _config_object(value: Any) -> bool:
    """A config object (of a known class, or an AutoBridge model whose class is not known), not
    a dict: what a configuration is made of."""
    return isinstance(value, Obj) and (value.cls is not None or value.label is not None)


def _device_name_method(target: DeviceName, name: str, args: list, kwargs: dict) -> Any:
    """``name.startswith(prefix or tuple of prefixes)``; any other method is unknown."""
    if name != "startswith" or kwargs or len(args) != 1:
        return UNKNOWN
    prefixes = args[0] if isinstance(args[0], tuple) else (args[0],)
    if not all(isinstance(prefix, str) for prefix in prefixes):
        return UNKNOWN
    outcomes = [target.startswith(prefix) for prefix in prefixes]
    return True if True in outcomes else (UNKNOWN if any(is_unknown(o) for o in outcomes) else False)
