"""Methods of config classes that cannot change ``self``, read with ``ast`` from their bodies.

A conservative static check: a method is listed only when nothing in its body can write to the
object it is called on. ``self`` (and anything read off it, or any local name bound to such a
value) may be read, compared, formatted, tested, given to a few functions that change nothing
(``dataclasses.replace``, ``copy.copy``...), and used to call another method of the class that
is itself listed; anything else (a store, ``del``, ``setattr``, ``super()``, a call of a method
of an attribute, handing it to another call, returning or storing it) keeps the method out.
Inherited methods resolve through the class's bases as Python finds them; a name the classes at
hand do not define (a base outside the source) is not listed.

A method whose body is ``return dataclasses.replace(self, field=parameter, ...)`` also records
which field each parameter sets, so that its result is known: a copy of the object with them.
"""

from __future__ import annotations

import ast

from mblint.schema.extract import ClassKinds, SourceIndex, dotted_name

# Calls that change nothing in what they are given; the first ones return an object that holds
# the given object's own parts (a shallow copy, an attribute), which is then followed in turn.
SHARING_CALLS = frozenset({"dataclasses.replace", "copy.copy", "getattr"})
NON_MUTATING_CALLS = SHARING_CALLS | frozenset({
    "copy.deepcopy", "dataclasses.asdict", "dataclasses.fields", "isinstance", "hasattr", "len", "str", "repr",
    "bool"})
_LAST_NAMES = frozenset(name.rpartition(".")[2] for name in NON_MUTATING_CALLS)
# Bases that define no method a configuration calls.
PLAIN_BASES = frozenset({"object", "abc.ABC", "ABC", "typing.Generic", "Generic", "typing.Protocol", "Protocol"})
_BUILTINS = frozenset({"getattr", "isinstance", "hasattr", "len", "str", "repr", "bool"})
# Where a value read off ``self`` is only looked at.
_READING_PARENTS = (ast.Compare, ast.UnaryOp, ast.BinOp, ast.FormattedValue, ast.Expr, ast.If, ast.While, ast.Assert)
# Where the value read off ``self`` is (part of) the value of the enclosing expression.
_PASSING_PARENTS = (ast.BoolOp, ast.NamedExpr, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.Starred)


class MethodReading:
    """What one method body does with its receiver: whether it keeps it as it is (given that
    the methods of the receiver it calls do: ``self_calls``), and the ``replace`` form."""

    __slots__ = ("keeps_self", "self_calls", "entry")

    def __init__(self, keeps_self: bool, self_calls: frozenset = frozenset(), entry: dict | None = None) -> None:
        self.keeps_self = keeps_self
        self.self_calls = self_calls
        self.entry = entry or {}


def read_method(index: SourceIndex, module: str, method: ast.FunctionDef) -> MethodReading:
    params = method.args.posonlyargs + method.args.args
    if not isinstance(method, ast.FunctionDef) or method.decorator_list or not params:
        return MethodReading(False)
    receiver = params[0].arg
    replaced = _replace_form(index, module, method, receiver)
    if replaced is not None:
        return MethodReading(True, entry=replaced)
    return _Checker(index, module, method, receiver).run()


def _replace_form(index: SourceIndex, module: str, method: ast.FunctionDef, receiver: str) -> dict | None:
    """{"replace": {field: parameter}, "params": [positional parameters after self]} of a body
    that is only ``return replace(self, field=parameter, ...)`` (a docstring aside)."""
    body = [s for s in method.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 1 or not isinstance(body[0], ast.Return) or not isinstance(body[0].value, ast.Call):
        return None
    call = body[0].value
    names = [a.arg for a in method.args.posonlyargs + method.args.args + method.args.kwonlyargs][1:]
    if _call_name(index, module, call.func) != "dataclasses.replace" or len(call.args) != 1 \
            or not (isinstance(call.args[0], ast.Name) and call.args[0].id == receiver):
        return None
    fields = {}
    for keyword in call.keywords:
        if keyword.arg is None or not (isinstance(keyword.value, ast.Name) and keyword.value.id in names):
            return None
        fields[keyword.arg] = keyword.value.id
    positional = [a.arg for a in method.args.posonlyargs + method.args.args][1:]
    return {"replace": fields, "params": positional}


def _call_name(index: SourceIndex, module: str, func: ast.expr) -> str | None:
    """The qualified name a call's function names (``replace`` imported from dataclasses:
    ``dataclasses.replace``), a builtin's bare name when the module does not define it. Only
    names that may be one of ``NON_MUTATING_CALLS`` are resolved (resolving may parse modules)."""
    name = dotted_name(func)
    if name is None or name.rpartition(".")[2] not in _LAST_NAMES:
        return None
    resolved = index.resolve_expr(module, func)
    if resolved is not None:
        return resolved
    return name if name in _BUILTINS else None


class _Checker:
    """The check of one body: every use of the receiver, and of local names bound to values
    read off it, must be one of the harmless uses."""

    def __init__(self, index: SourceIndex, module: str, method: ast.FunctionDef, receiver: str) -> None:
        self.index = index
        self.module = module
        self.receiver = receiver
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(method):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.names = [n for n in ast.walk(method) if isinstance(n, ast.Name)]
        self.method = method
        self.self_calls: set[str] = set()

    def run(self) -> MethodReading:
        """Each use of the receiver, then of each local name bound to what it holds (a work
        list: every use is looked at once)."""
        uses: dict[str, list[ast.Name]] = {}
        for name in self.names:
            if name.id == "super" or name.id == self.receiver and not isinstance(name.ctx, ast.Load):
                return MethodReading(False)  # super() reaches the receiver; or ``self`` rebound or deleted
            if isinstance(name.ctx, ast.Load):
                uses.setdefault(name.id, []).append(name)
        tainted = {self.receiver}
        pending = [self.receiver]
        while pending:
            bound: set[str] = set()
            for use in uses.get(pending.pop(), ()):
                if not self._harmless(use, bound):
                    return MethodReading(False)
            pending.extend(bound - tainted)
            tainted |= bound
        return MethodReading(True, frozenset(self.self_calls))

    def _harmless(self, node: ast.expr, bound: set[str]) -> bool:
        """Whether a use of a value read off the receiver leaves the receiver as it is; the
        local names it is bound to are added to ``bound``."""
        while True:
            parent = self.parents.get(node)
            if isinstance(parent, (ast.Attribute, ast.Subscript)) and parent.value is node:
                if not isinstance(parent.ctx, ast.Load):
                    return False
                grand = self.parents.get(parent)
                if isinstance(parent, ast.Attribute) and isinstance(grand, ast.Call) and grand.func is parent:
                    if not (isinstance(node, ast.Name) and node.id == self.receiver):
                        return False  # a method of an attribute, or of a local name
                    self.self_calls.add(parent.attr)
                    node = grand
                    continue
                node = parent
            elif isinstance(parent, ast.keyword) or isinstance(parent, ast.Call) and parent.func is not node:
                call = self.parents.get(parent) if isinstance(parent, ast.keyword) else parent
                name = _call_name(self.index, self.module, call.func)
                if name not in NON_MUTATING_CALLS:
                    return False
                if name not in SHARING_CALLS:
                    return True
                node = call
            elif isinstance(parent, _PASSING_PARENTS) or isinstance(parent, ast.IfExp) and parent.test is not node:
                node = parent
            elif isinstance(parent, _READING_PARENTS) or isinstance(parent, ast.IfExp) \
                    or isinstance(parent, ast.Subscript) and parent.slice is node:
                return True
            elif isinstance(parent, ast.comprehension) and parent.iter is node \
                    or isinstance(parent, ast.For) and parent.iter is node:
                return _bind(parent.target, bound)
            elif isinstance(parent, ast.comprehension):  # a condition of a comprehension
                return node in parent.ifs
            elif isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is node:
                targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
                return all(_bind(t, bound) for t in targets)
            else:
                return False


def _bind(target: ast.expr, bound: set[str]) -> bool:
    """Local names a value is bound to (a name, or a tuple of names); False for any other target."""
    if isinstance(target, ast.Name):
        bound.add(target.id)
        return True
    if isinstance(target, (ast.Tuple, ast.List)):
        return all(_bind(t, bound) for t in target.elts)
    return False


def self_preserving_methods(index: SourceIndex, classes, kinds: ClassKinds | None = None) -> dict:
    """{class qualname: {method: entry}} of the methods of ``classes`` (qualnames) that cannot
    change ``self``, inherited ones included; entry: {} or the ``replace`` form
    ({"replace": {field: parameter}, "params": [...]}). Classes without one are left out."""
    kinds = kinds or ClassKinds(index)
    readings: dict[int, MethodReading] = {}
    found = {}
    for qualname in sorted(classes):
        table = _method_table(index, kinds, qualname)
        for method, (module, node) in table.items():
            if node is not None and id(node) not in readings:
                readings[id(node)] = read_method(index, module, node)
        kept = _fixpoint({name: readings[id(node)] if node is not None else None
                          for name, (_, node) in table.items()})
        if kept:
            found[qualname] = kept
    return found


def _method_table(index: SourceIndex, kinds: ClassKinds, qualname: str) -> dict:
    """{name: (module, FunctionDef or None)} of the names the class's body and its bases' bind,
    the first along the MRO winning; None where that binding is no plain method."""
    table: dict = {}
    for owner in kinds.mro(qualname):
        node = index.class_node(owner)
        module = owner.rpartition(".")[0]
        for stmt in node.body if node else ():
            for name in _bound_names(stmt):
                table.setdefault(name, (module, stmt if isinstance(stmt, ast.FunctionDef) else None))
        if any(index.class_node(base) is None and base not in PLAIN_BASES for base in kinds.bases(owner)):
            break  # a base out of sight may define any name the bases after it along the MRO define
    return table


def _bound_names(stmt: ast.stmt) -> list[str]:
    if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [stmt.name]
    if isinstance(stmt, ast.Assign):
        return [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return [stmt.target.id]
    # anything else binding names in a class body (if, try, import) may rebind any of them
    return [n.id for n in ast.walk(stmt) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)] + [
        a.asname or a.name for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names] + [
        n.name for n in ast.walk(stmt) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]


def _fixpoint(readings: dict[str, MethodReading | None]) -> dict[str, dict]:
    """The methods that keep ``self``, given those they call on it: the least fixpoint (methods
    that only call each other in a cycle are left out), by a work list."""
    waiting = {name: set(r.self_calls) for name, r in readings.items() if r is not None and r.keeps_self}
    callers: dict[str, list[str]] = {}
    for name, calls in waiting.items():
        for call in calls:
            callers.setdefault(call, []).append(name)
    ready = [name for name, calls in waiting.items() if not calls]
    kept: dict[str, dict] = {}
    while ready:
        name = ready.pop()
        kept[name] = readings[name].entry
        for caller in callers.get(name, ()):
            calls = waiting[caller]
            if name in calls:
                calls.discard(name)
                if not calls:
                    ready.append(caller)
    return {name: kept[name] for name in sorted(kept) if not (name.startswith("__") and name.endswith("__"))}
