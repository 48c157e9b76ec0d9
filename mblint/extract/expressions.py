"""Expressions: names, attributes, containers, operators, comprehensions and call arguments."""

from __future__ import annotations

import ast
import operator
from typing import Any

from mblint.extract.hf_models import BridgeInstance
from mblint.extract.limits import _FAST_PATH_DEPTH, MAX_COMPREHENSION, MAX_EXPR_DEPTH, MAX_VALUE_SIZE, _result_too_big
from mblint.extract.megatron import TORCH_DTYPES
from mblint.extract.python_builtins import _PLAIN_TYPES, SCALARS, _known_seq
from mblint.extract.scopes import _NOT_FOUND, Frame, LazyImport
from mblint.extract.statements import _handlers
from mblint.extract.values import (
    BoundMethod,
    ClassRef,
    DeviceName,
    DeviceProperties,
    EnumRef,
    External,
    FuncRef,
    HFBridge,
    ModuleRef,
    Obj,
    is_missing,
    is_unknown,
    merge_values,
    true_slots,
)
from mblint.model import UNKNOWN, NamedObject, Origin

LIST_MUTATORS = {"append", "extend", "insert", "remove", "pop", "clear", "sort", "reverse"}
DICT_MUTATORS = {"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"}


BINARY_OPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
    ast.Pow: operator.pow,
    ast.BitOr: operator.or_,
    ast.BitAnd: operator.and_,
    ast.BitXor: operator.xor,
    ast.LShift: operator.lshift,
    ast.RShift: operator.rshift,
}


COMPARE_OPS = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}


def _enum_value(name: str, value: Any) -> Any:
    """Enum members stand for their string value, or their name when the value is not a
    string (``CudaGraphScope.attn`` -> "attn"): Megatron-Bridge accepts member names."""
    return value if isinstance(value, str) else name


def _scalarish(value: Any) -> bool:
    return isinstance(value, (int, float, str, bool, tuple, list)) or value is None


class ExpressionsMixin:
    """Expressions. Part of ``Interpreter``."""

    def eval(self, node: ast.expr | None, frame: Frame) -> Any:
        if node is None:
            return None
        kind = type(node)
        # Fast paths: what cannot evaluate anything else, nor reach the depth limit (about 9 % of a
        # cold run's CPU, measured: benchmarks/README.md, contortions).
        if self.expr_depth < _FAST_PATH_DEPTH:
            if kind is ast.Constant:
                value = node.value
                return value if type(value) in _PLAIN_TYPES else UNKNOWN
            if kind is ast.Name:
                value = frame.locals.get(node.id, _NOT_FOUND)
                if value is not _NOT_FOUND and type(value) is not LazyImport:
                    return value
            elif kind is ast.Attribute and type(owner_node := node.value) is ast.Name:  # cfg.model
                owner = frame.locals.get(owner_node.id)
                if type(owner) is Obj and owner.cls is not None:
                    slot = owner.fields.get(node.attr)
                    if slot is not None:
                        return slot[0]
        self.expr_depth += 1
        try:
            if self.expr_depth > MAX_EXPR_DEPTH:
                self.limit(f"{self.where}: expression depth limit ({MAX_EXPR_DEPTH}) reached: the value is unknown")
                return UNKNOWN
            handler = _EXPR_HANDLERS.get(kind)
            return handler(self, node, frame) if handler else UNKNOWN
        finally:
            self.expr_depth -= 1

    def expr_Constant(self, node: ast.Constant, frame: Frame) -> Any:
        return node.value if isinstance(node.value, SCALARS) else UNKNOWN

    def expr_Name(self, node: ast.Name, frame: Frame) -> Any:
        return self.lookup(node.id, frame)

    def expr_Attribute(self, node: ast.Attribute, frame: Frame) -> Any:
        owner = self.eval(node.value, frame)
        if type(owner) is Obj and owner.cls is not None:  # a field of a config object: most reads
            slot = owner.fields.get(node.attr)
            if slot is not None:
                return slot[0]
        return self.get_attr(owner, node.attr)

    def get_attr(self, owner: Any, name: str) -> Any:
        if isinstance(owner, Obj):
            if not owner.is_dict:
                value = owner.get(name)
                if not is_missing(value):
                    return value
            return BoundMethod(owner, name)
        if isinstance(owner, ModuleRef):  # a module-level object: each read gets its copy, as in lookup()
            value = owner.scope.lookup(name)
            if isinstance(value, Obj):
                return self.copy_obj(value, {})
            return UNKNOWN if value is _NOT_FOUND else value
        if isinstance(owner, External):
            if owner.qualname == "torch" and name in TORCH_DTYPES:
                return f"torch.{name}"
            return self.external(f"{owner.qualname}.{name}")
        if isinstance(owner, EnumRef):
            for member, value in owner.members:
                if member == name:
                    return _enum_value(member, value)
            return UNKNOWN
        if isinstance(owner, (ClassRef, HFBridge, str, DeviceName)):
            return BoundMethod(owner, name)
        if isinstance(owner, DeviceProperties):
            return getattr(owner, name) if name in ("major", "name") else UNKNOWN
        if isinstance(owner, BridgeInstance):
            return self.bridge_attr(owner, name)
        return UNKNOWN

    def expr_Subscript(self, node: ast.Subscript, frame: Frame) -> Any:
        owner = self.eval(node.value, frame)
        key = self.eval(node.slice, frame)
        if is_unknown(key) or isinstance(key, Obj):
            return UNKNOWN
        if isinstance(owner, Obj) and owner.is_dict:
            value = owner.get(key)
            return UNKNOWN if is_missing(value) else value
        if isinstance(owner, EnumRef) and isinstance(key, str):
            return self.get_attr(owner, key)
        if isinstance(owner, (tuple, list, str)) and isinstance(key, (int, slice)):
            try:
                return owner[key]
            except (IndexError, TypeError):
                return UNKNOWN
        return UNKNOWN

    def expr_Slice(self, node: ast.Slice, frame: Frame) -> Any:
        parts = [self.eval(p, frame) if p is not None else None for p in (node.lower, node.upper, node.step)]
        return UNKNOWN if any(is_unknown(p) for p in parts) else slice(*parts)

    def expr_Tuple(self, node: ast.Tuple, frame: Frame) -> Any:
        items = self.eval_elements(node.elts, frame)
        return UNKNOWN if items is None else self.sized(tuple(items))

    def expr_List(self, node: ast.List, frame: Frame) -> Any:
        items = self.eval_elements(node.elts, frame)
        return UNKNOWN if items is None else self.sized(list(items))

    def expr_Set(self, node: ast.Set, frame: Frame) -> Any:
        items = self.eval_elements(node.elts, frame)
        if items is None or not _known_seq(items):
            return UNKNOWN
        try:
            return set(items)
        except TypeError:
            return UNKNOWN

    def eval_elements(self, elements: list[ast.expr], frame: Frame) -> list | None:
        items: list = []
        for element in elements:
            if isinstance(element, ast.Starred):
                value = self.eval(element.value, frame)
                if not isinstance(value, (tuple, list)):
                    return None
                items.extend(value)
            else:
                items.append(self.eval(element, frame))
        return items

    def expr_Dict(self, node: ast.Dict, frame: Frame) -> Any:
        obj = self.new_obj(None, self.origin(node, frame))
        for key_node, value_node in zip(node.keys, node.values):
            if key_node is None:
                self.splat_into(obj, self.eval(value_node, frame))
                continue
            key = self.eval(key_node, frame)
            value = self.eval(value_node, frame)
            if is_unknown(key) or isinstance(key, Obj):
                obj.open = True
            else:
                obj.set(key, value, self.origin(value_node, frame))
        return obj

    def splat_into(self, obj: Obj, source: Any) -> None:
        """``source``'s items written into ``obj``, a new dict."""
        if isinstance(source, Obj) and source.is_dict:
            obj.writable().update(true_slots(source))
            if source.open:
                obj.mark_open()
        elif source is None or (isinstance(source, dict) and not source):
            return
        else:
            obj.mark_open()

    def dict_from(self, items: dict, origin: Origin | None) -> Obj:
        obj = self.new_obj(None, origin)
        for key, value in items.items():
            obj.set(key, value, origin)
        return obj

    def expr_JoinedStr(self, node: ast.JoinedStr, frame: Frame) -> Any:
        parts = []
        length = 0
        for value in node.values:
            if isinstance(value, ast.Constant):
                parts.append(str(value.value))
            elif isinstance(value, ast.FormattedValue) and value.format_spec is None and value.conversion == -1:
                inner = self.eval(value.value, frame)
                if is_unknown(inner) or not isinstance(inner, SCALARS):
                    return UNKNOWN
                parts.append(str(inner))
            else:
                return UNKNOWN
            length += len(parts[-1])
            if length > MAX_VALUE_SIZE:
                return self.too_big()
        return "".join(parts)

    def expr_BinOp(self, node: ast.BinOp, frame: Frame) -> Any:
        return self.binary(type(node.op), self.eval(node.left, frame), self.eval(node.right, frame))

    def binary(self, op: type, left: Any, right: Any) -> Any:
        if isinstance(left, Obj) and isinstance(right, Obj) and op is ast.BitOr and left.is_dict and right.is_dict:
            merged = self.new_obj(None, left.created_at)
            self.splat_into(merged, left)
            self.splat_into(merged, right)
            return merged
        if is_unknown(left) or is_unknown(right) or not _scalarish(left) or not _scalarish(right):
            return UNKNOWN
        if _result_too_big(op, left, right):
            return self.too_big()
        try:
            return self.sized(BINARY_OPS[op](left, right))
        except Exception:  # noqa: BLE001 - e.g. division by zero: the real code would raise
            return UNKNOWN

    def expr_UnaryOp(self, node: ast.UnaryOp, frame: Frame) -> Any:
        operand = self.eval(node.operand, frame)
        if isinstance(node.op, ast.Not):
            truth = self.truth(operand)
            return UNKNOWN if truth is None else not truth
        if is_unknown(operand) or not isinstance(operand, (int, float)):
            return UNKNOWN
        return {ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Invert: operator.invert}[type(node.op)](operand)

    def expr_BoolOp(self, node: ast.BoolOp, frame: Frame) -> Any:
        is_and = isinstance(node.op, ast.And)
        result: Any = None
        for value_node in node.values:
            value = self.eval(value_node, frame)
            truth = self.truth(value)
            if truth is None:
                return UNKNOWN
            result = value
            if truth is not is_and:
                return value
        return result

    def expr_Compare(self, node: ast.Compare, frame: Frame) -> Any:
        left = self.eval(node.left, frame)
        for op, right_node in zip(node.ops, node.comparators):
            right = self.eval(right_node, frame)
            outcome = self.compare(type(op), left, right)
            if outcome is not True:
                return outcome
            left = right
        return True

    def compare(self, op: type, left: Any, right: Any) -> Any:
        if DeviceName in (type(left), type(right)):
            return _compare_device_name(op, left, right)
        if op in _IDENTITY_OPS and (type(left) in _NAMED or type(right) in _NAMED):
            same = _same_named(left, right)
            return same if same is UNKNOWN or op in (ast.Is, ast.Eq) else not same
        if op in (ast.Is, ast.IsNot):
            if is_unknown(left) or is_unknown(right):
                return UNKNOWN
            same = left is right if not (left is None or right is None) else (left is None and right is None)
            return same if op is ast.Is else not same
        if op in (ast.In, ast.NotIn):
            if is_unknown(left) or isinstance(left, Obj):
                return UNKNOWN
            if isinstance(right, Obj) and right.is_dict:
                present = left in right.fields
                if not present and right.open:
                    return UNKNOWN
            elif isinstance(right, (tuple, list, set, str)) and _known_seq(right if not isinstance(right, str) else ()):
                try:
                    present = left in right
                except TypeError:
                    return UNKNOWN
            else:
                return UNKNOWN
            return present if op is ast.In else not present
        if is_unknown(left) or is_unknown(right) or isinstance(left, Obj) or isinstance(right, Obj):
            return UNKNOWN
        try:
            return COMPARE_OPS[op](left, right)
        except TypeError:
            return UNKNOWN

    def truth(self, value: Any) -> bool | None:
        if is_unknown(value):
            return None
        if isinstance(value, Obj):
            if value.is_dict:
                if value.fields:
                    return True
                return None if value.open else False
            return True
        if isinstance(value, (External, BoundMethod, HFBridge)):
            return None
        try:
            return bool(value)
        except Exception:  # noqa: BLE001
            return None

    def expr_IfExp(self, node: ast.IfExp, frame: Frame) -> Any:
        test = self.truth(self.eval(node.test, frame))
        if test is True:
            return self.eval(node.body, frame)
        if test is False:
            return self.eval(node.orelse, frame)
        return merge_values(self.eval(node.body, frame), self.eval(node.orelse, frame))

    def expr_NamedExpr(self, node: ast.NamedExpr, frame: Frame) -> Any:
        value = self.eval(node.value, frame)
        self.store(node.target, value, frame, self.origin(node, frame))
        return value

    def expr_Lambda(self, node: ast.Lambda, frame: Frame) -> Any:
        return UNKNOWN

    def comprehension_items(self, node: ast.expr, frame: Frame, element) -> list | None:
        """Evaluate ``element(frame)`` for every binding of the generators, or None when an
        iterable or a condition is unknown."""
        results: list = []
        scope = Frame(frame.scope, locals=dict(frame.locals), function=frame.function)
        if not self._comprehend(node.generators, 0, scope, element, results):
            return None
        return results

    def _comprehend(self, generators: list, index: int, frame: Frame, element, results: list) -> bool:
        if index == len(generators):
            results.append(element(frame))
            return True
        generator = generators[index]
        iterable = self.iterate(self.eval(generator.iter, frame))
        if iterable is None or len(iterable) > MAX_COMPREHENSION:
            return False
        for item in iterable:
            self.tick()
            self.store(generator.target, item, frame, None)
            keep = True
            for condition in generator.ifs:
                truth = self.truth(self.eval(condition, frame))
                if truth is None:
                    return False
                keep = keep and truth
            if keep and not self._comprehend(generators, index + 1, frame, element, results):
                return False
        return True

    def iterate(self, value: Any) -> list | None:
        if isinstance(value, (list, tuple, set, str)):
            return list(value) if not isinstance(value, set) else sorted(value, key=repr)
        if isinstance(value, Obj) and value.is_dict and not value.open:
            return list(value.fields)
        if isinstance(value, EnumRef):
            return [_enum_value(name, member) for name, member in value.members]
        return None

    def expr_ListComp(self, node: ast.ListComp, frame: Frame) -> Any:
        items = self.comprehension_items(node, frame, lambda f: self.eval(node.elt, f))
        return UNKNOWN if items is None else self.sized(items)

    def expr_GeneratorExp(self, node: ast.GeneratorExp, frame: Frame) -> Any:
        items = self.comprehension_items(node, frame, lambda f: self.eval(node.elt, f))
        return UNKNOWN if items is None else self.sized(tuple(items))

    def expr_SetComp(self, node: ast.SetComp, frame: Frame) -> Any:
        items = self.comprehension_items(node, frame, lambda f: self.eval(node.elt, f))
        if items is None or not _known_seq(items):
            return UNKNOWN
        try:
            return set(items)
        except TypeError:
            return UNKNOWN

    def expr_DictComp(self, node: ast.DictComp, frame: Frame) -> Any:
        pairs = self.comprehension_items(node, frame, lambda f: (self.eval(node.key, f), self.eval(node.value, f)))
        if pairs is None:
            return UNKNOWN
        obj = self.new_obj(None, self.origin(node, frame))
        for key, value in pairs:
            if is_unknown(key) or isinstance(key, Obj):
                obj.open = True
            else:
                obj.set(key, value, self.origin(node, frame))
        return obj

    def expr_Call(self, node: ast.Call, frame: Frame) -> Any:
        func_node = node.func
        if type(func_node) is ast.Attribute:
            if func_node.attr in LIST_MUTATORS:
                holder = self.eval(func_node.value, frame)
                if isinstance(holder, list):
                    return self.mutate_list(holder, node, frame)
            if (func_node.attr in DICT_MUTATORS and type(func_node.value) is ast.Attribute
                    and func_node.value.attr == "__dict__"):  # cfg.x.__dict__.update(...)
                self.record_unfollowed(node, func_node.value.value, frame,
                                       "mblint does not follow a change through `__dict__`")
        func = self.eval(func_node, frame)
        args: list = []
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                value = self.eval(arg.value, frame)
                if isinstance(value, (tuple, list)):
                    args.extend(value)
                else:
                    self.havoc_values([value], node, frame)
                    return self.unmodelled_call(func, args, {}, node, frame)
            else:
                args.append(self.eval(arg, frame))
        kwargs: dict = {}
        kw_origins: dict = {}
        for keyword in node.keywords:
            value = self.eval(keyword.value, frame)
            name = keyword.arg
            if name is None:
                if isinstance(value, Obj) and value.is_dict and not value.open:
                    for key, (item, origins) in true_slots(value).items():
                        kwargs[key] = item
                        kw_origins[key] = origins[-1] if origins else self.reserve_origin(keyword, frame)
                else:
                    return self.unmodelled_call(func, args, kwargs, node, frame)
            else:
                kwargs[name] = value
                kw_origins[name] = self.reserve_origin(keyword, frame)
        return self.call(func, args, kwargs, node, frame, kw_origins)

    def mutate_list(self, current: list, node: ast.Call, frame: Frame) -> Any:
        """Lists are values here, so ``x.append(v)`` stores the new list back into ``x``."""
        name = node.func.attr
        args = [self.eval(arg, frame) for arg in node.args]
        updated: Any = UNKNOWN
        if name == "append" and len(args) == 1:
            updated = current + [args[0]]
        elif name == "extend" and len(args) == 1 and isinstance(args[0], (list, tuple)):
            updated = current + list(args[0])
        elif name == "insert" and len(args) == 2 and isinstance(args[0], int):
            updated = list(current)
            updated.insert(args[0], args[1])
        elif name == "clear" and not args:
            updated = []
        if not is_unknown(updated):
            updated = self.sized(updated)
        self.store(node.func.value, updated, frame, self.origin(node, frame))
        return None


_EXPR_HANDLERS = _handlers(ExpressionsMixin, "expr_")


_IDENTITY_OPS = (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)
_NAMED = (External, FuncRef, NamedObject)


def _same_named(left: Any, right: Any) -> Any:
    """Whether a function or imported name is the same object as another value (their ``is``,
    and their ``==``, which is identity): the same name or definition is; two definitions
    are not; two names may be one object (a re-export), so that is unknown."""
    if is_unknown(left) or is_unknown(right):
        return UNKNOWN
    if left == right:
        return True
    if type(left) is FuncRef and type(right) is FuncRef:
        return False
    if type(left) in _NAMED and type(right) in _NAMED:
        return UNKNOWN
    return False if left is None or right is None or isinstance(left, SCALARS) or isinstance(right, SCALARS) else UNKNOWN


def _compare_device_name(op: type, left: Any, right: Any) -> Any:
    """``==``/``!=`` with a string and ``in``/``not in`` a sequence of strings, as far as the
    start of the name decides; anything else is unknown."""
    if op in (ast.Eq, ast.NotEq):
        name, other = (left, right) if isinstance(left, DeviceName) else (right, left)
        same = name.equals(other)
    elif op in (ast.In, ast.NotIn) and isinstance(left, DeviceName) and isinstance(right, (tuple, list, set)):
        outcomes = [left.equals(item) for item in right]
        same = True if True in outcomes else (UNKNOWN if any(is_unknown(o) for o in outcomes) else False)
    else:
        return UNKNOWN
    if is_unknown(same):
        return UNKNOWN
    return same if op in (ast.Eq, ast.In) else not same
