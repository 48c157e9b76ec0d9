"""Statements: blocks, branches (both ways when the condition is unknown), loops, stores, and havoc
where mblint cannot follow.
"""

from __future__ import annotations

import ast
from typing import Any

from mblint import coverage
from mblint.extract.limits import MAX_STEPS, BudgetExceeded
from mblint.extract.positions import origin_at
from mblint.extract.scopes import Frame, Return
from mblint.extract.values import BoundMethod, FuncRef, Obj, is_unknown
from mblint.model import UNKNOWN, Origin


def _handlers(cls: type, prefix: str) -> dict[type, Any]:
    """Methods ``<prefix><NodeClass>`` of ``cls`` by ``ast`` node class, looked up once."""
    return {getattr(ast, name[len(prefix):]): method for name, method in vars(cls).items()
            if name.startswith(prefix) and hasattr(ast, name[len(prefix):])}


class StatementsMixin:
    """Statements, stores and havoc. Part of ``Interpreter``."""

    def exec_block(self, body: list[ast.stmt], frame: Frame) -> bool:
        """Run statements; False when the block always leaves (return/raise)."""
        for stmt in body:
            try:
                self.exec_stmt(stmt, frame)
            except Return as leaving:
                if not leaving.dead:
                    frame.returns.append((leaving.value, self.snapshot(frame)))
                return False
        return True

    def exec_stmt(self, stmt: ast.stmt, frame: Frame) -> None:
        self._running_stmt = stmt
        self._running_scope = frame.scope
        self.steps += 1
        if self.steps > MAX_STEPS:
            self.tick(0)
        handler = _STMT_HANDLERS.get(type(stmt))
        if handler is None:
            self.havoc_stmt(stmt, frame)
            return
        try:
            handler(self, stmt, frame)
        except (Return, BudgetExceeded):
            raise
        except Exception as error:  # noqa: BLE001 - an interpreter gap must not crash the lint
            self.stmt_failed(stmt, frame, error)

    def stmt_failed(self, stmt: ast.stmt, frame: Frame, error: Exception) -> None:
        """What a statement the interpreter failed on may set becomes unknown."""
        if isinstance(error, RecursionError):
            self.limit(f"{self.where}: Python recursion limit reached (nested too deeply): "
                       "what the statement sets is unknown")
        else:
            self.notes.append(f"{frame.scope.source.display_path}:{stmt.lineno}: not understood ({type(error).__name__})")
            self.record_unfollowed(stmt, stmt, frame, f"mblint failed to interpret it ({type(error).__name__})")
        self.havoc_stmt(stmt, frame)

    def stmt_Expr(self, stmt: ast.Expr, frame: Frame) -> None:
        value_node = stmt.value
        if type(value_node) is not ast.Constant:
            self.eval(value_node, frame)

    def stmt_Pass(self, stmt: ast.Pass, frame: Frame) -> None:
        pass

    stmt_Assert = stmt_Pass

    stmt_Global = stmt_Pass

    stmt_Nonlocal = stmt_Pass

    def stmt_Import(self, stmt: ast.Import, frame: Frame) -> None:
        self.exec_import(stmt, frame)

    stmt_ImportFrom = stmt_Import

    def stmt_FunctionDef(self, stmt: ast.FunctionDef, frame: Frame) -> None:
        frame.locals[stmt.name] = FuncRef(frame.scope, stmt)

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, stmt: ast.ClassDef, frame: Frame) -> None:
        frame.locals[stmt.name] = UNKNOWN

    def stmt_Return(self, stmt: ast.Return, frame: Frame) -> None:
        value_node = stmt.value
        raise Return(self.eval(value_node, frame) if value_node is not None else None)

    def stmt_Raise(self, stmt: ast.Raise, frame: Frame) -> None:
        raise Return(None, dead=True)

    def stmt_Assign(self, stmt: ast.Assign, frame: Frame) -> None:
        value = self.eval(stmt.value, frame)
        targets = stmt.targets
        if all(type(target) is ast.Name for target in targets):  # a local keeps no origin, only its statement
            sites = frame.local_sites
            for target in targets:
                self.store(target, value, frame, None)
                sites[target.id] = (stmt, value)
            return
        origin = self.origin(stmt, frame)
        if type(stmt.value) is ast.Name:
            origin = self.through_local(origin, stmt.value.id, value, frame)
        for target in targets:
            self.store(target, value, frame, origin)

    def through_local(self, origin: Origin, name: str, value: Any, frame: Frame) -> Origin:
        """``origin`` (a store of the local ``name``'s ``value``) with ``through``, the place
        of the assignment that gave the local this value, when the frame still holds it."""
        site = frame.local_sites.get(name)
        if site is None or site[1] is not value:
            return origin  # no plain assignment, or another value since (a branch restored)
        through = origin_at(site[0], frame.scope.source, origin.seq, self.call_sites)
        return Origin(origin.path, origin.line, origin.column, origin.end_line, origin.end_column, origin.kind,
                      origin.seq, origin.via, through)

    def stmt_AnnAssign(self, stmt: ast.AnnAssign, frame: Frame) -> None:
        if stmt.value is None:
            return
        self.store(stmt.target, self.eval(stmt.value, frame), frame, self.origin(stmt, frame))

    def stmt_AugAssign(self, stmt: ast.AugAssign, frame: Frame) -> None:
        current = self.eval(stmt.target, frame)
        value = self.binary(type(stmt.op), current, self.eval(stmt.value, frame))
        self.store(stmt.target, value, frame, self.origin(stmt, frame))

    def stmt_Delete(self, stmt: ast.Delete, frame: Frame) -> None:
        for target in stmt.targets:
            if isinstance(target, ast.Subscript):
                container = self.eval(target.value, frame)
                key = self.eval(target.slice, frame)
                if isinstance(container, Obj) and container.is_dict and not is_unknown(key):
                    container.writable().pop(key, None)
                    continue
            if isinstance(target, ast.Attribute):  # the class default again, or an AttributeError
                self.record_unfollowed(stmt, target.value, frame, "mblint does not follow `del` of a field")
            self.havoc_target(target, frame)

    def stmt_If(self, stmt: ast.If, frame: Frame) -> None:
        test = self.truth(self.eval(stmt.test, frame))
        if test is True:
            self._run_branch(stmt.body, frame)
        elif test is False:
            self._run_branch(stmt.orelse, frame)
        else:
            self.exec_both(stmt.body, stmt.orelse, frame)

    def _run_branch(self, body: list[ast.stmt], frame: Frame) -> None:
        if not self.exec_block(body, frame):
            raise Return(None, dead=True)

    def exec_both(self, first: list[ast.stmt], second: list[ast.stmt], frame: Frame) -> None:
        start = self.snapshot(frame)
        first_open = self.exec_block(first, frame)
        if not second:  # most branches: an `if` without `else`, a loop body
            self.charge(len(self.objects) + self.uncopied)  # as the snapshot after the first path did
            if first_open:
                self.merge_start_into_current(start, frame)
            else:
                self.restore(start, frame)
            return
        after_first = self.snapshot(frame)
        self.restore(start, frame)
        second_open = self.exec_block(second, frame)
        if first_open and second_open:
            self.merge_into_current(after_first, frame, start)
        elif first_open:
            self.restore(after_first, frame)
        elif not second_open:
            raise Return(None, dead=True)

    def stmt_For(self, stmt: ast.For, frame: Frame) -> None:
        self.eval(stmt.iter, frame)
        self.havoc_loop([stmt.target], stmt.body + stmt.orelse, frame)

    stmt_AsyncFor = stmt_For

    def stmt_While(self, stmt: ast.While, frame: Frame) -> None:
        self.havoc_loop([], stmt.body + stmt.orelse, frame)

    def havoc_loop(self, targets: list[ast.expr], body: list[ast.stmt], frame: Frame) -> None:
        self.havoc_depth += 1
        try:
            for target in targets:
                self.havoc_target(target, frame)
            start_returns = len(frame.returns)
            self.exec_both(body, [], frame)
            for index in range(start_returns, len(frame.returns)):
                frame.returns[index] = (UNKNOWN, frame.returns[index][1])
        finally:
            self.havoc_depth -= 1

    def stmt_Break(self, stmt: ast.stmt, frame: Frame) -> None:
        raise Return(None, dead=True)

    stmt_Continue = stmt_Break

    def stmt_With(self, stmt: ast.With, frame: Frame) -> None:
        for item in stmt.items:
            self.eval(item.context_expr, frame)
            if item.optional_vars is not None:
                self.havoc_target(item.optional_vars, frame)
        if not self.exec_block(stmt.body, frame):
            raise Return(None, dead=True)

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, stmt: ast.Try, frame: Frame) -> None:
        if not stmt.handlers:
            self._run_branch(stmt.body + stmt.orelse + stmt.finalbody, frame)
            return
        handlers = [s for handler in stmt.handlers for s in handler.body]
        self.exec_both(stmt.body + stmt.orelse, handlers, frame)
        self._run_branch(stmt.finalbody, frame)

    stmt_TryStar = stmt_Try

    def stmt_Match(self, stmt: ast.stmt, frame: Frame) -> None:
        self.record_unfollowed(stmt, stmt, frame, "mblint does not interpret `match` statements")
        self.havoc_stmt(stmt, frame)

    def store(self, target: ast.expr, value: Any, frame: Frame, origin: Origin | None) -> None:
        if self.havoc_depth:
            value = UNKNOWN
        kind = type(target)
        if kind is ast.Attribute:
            self.store_attribute(self.eval(target.value, frame), target, value, origin, frame)
        elif kind is ast.Name:
            frame.locals[target.id] = value
        elif isinstance(target, ast.Subscript):
            owner = self.eval(target.value, frame)
            key = self.eval(target.slice, frame)
            if isinstance(owner, Obj):
                if is_unknown(key) or isinstance(key, Obj):
                    self.havoc_obj(owner, origin)
                else:
                    owner.set(key, value, origin)
            elif (is_unknown(owner) or isinstance(owner, BoundMethod)) and not _names_a_field(target.value):
                self.record_unfollowed(target, target.value, frame, "what it assigns to is unknown to mblint")
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.store_sequence(target, value, frame, origin)
        elif isinstance(target, ast.Starred):
            self.store(target.value, UNKNOWN, frame, origin)

    def store_attribute(self, owner: Any, target: ast.Attribute, value: Any, origin: Origin | None,
                        frame: Frame | None = None) -> None:
        """``target`` (``owner.name``) set to ``value``, ``owner`` being the value of ``target.value``."""
        if type(owner) is Obj:
            if self.field_aliases:
                self.store_attr(owner, target.attr, value, origin)
            else:
                owner.set(target.attr, value, origin)
        elif isinstance(owner, (str, int, float, bool)) or owner is None:
            self.attribute_errors.append((origin, ast.unparse(target.value), owner, target.attr))
        elif frame is not None and is_unknown(owner) and not _names_a_field(target.value):
            self.record_unfollowed(target, target.value, frame, "what it assigns to is unknown to mblint")

    def store_sequence(self, target: ast.Tuple | ast.List, value: Any, frame: Frame, origin: Origin | None) -> None:
        items = list(value) if isinstance(value, (tuple, list)) else None
        starred = [index for index, element in enumerate(target.elts) if isinstance(element, ast.Starred)]
        if items is not None and len(starred) == 1 and len(items) >= len(target.elts) - 1:
            star = starred[0]
            after = len(target.elts) - star - 1
            rest = items[star:len(items) - after]  # `a, *b = 1, 2, 3`: b is the list [2, 3]
            items = items[:star] + [rest] + items[len(items) - after:]
            target_elts = [e.value if isinstance(e, ast.Starred) else e for e in target.elts]
        elif items is None or len(items) != len(target.elts) or starred:
            for element in target.elts:
                self.store(element, UNKNOWN, frame, origin)
            return
        else:
            target_elts = target.elts
        for element, item in zip(target_elts, items):
            self.store(element, item, frame, origin)

    def store_attr(self, owner: Obj, name: str, value: Any, origin: Origin | None) -> None:
        owner.set(name, value, origin)
        aliases = self.field_aliases.get(owner.type_name) if self.field_aliases else None
        alias = aliases.get(name) if aliases else None
        if alias:
            owner.set(alias, value, origin)

    def record_unfollowed(self, node: ast.AST, within: ast.AST | list, frame: Frame, why: str) -> None:
        """A gap at ``node``, which mblint does not follow (``why``), when the configuration
        objects that ``within`` (a node or a list of them) names may be changed by it: they
        become unknown."""
        parts = self.config_parts(within, frame)
        if not parts:
            return
        origin = self.origin(node, frame)
        self.gaps.append(coverage.unfollowed_statement(node, [part for part, _ in parts], why)._replace(origin=origin))
        self.havoc_values([value for _, value in parts], node, frame)

    def config_parts(self, node: ast.AST | list, frame: Frame) -> list[tuple[ast.expr, Obj]]:
        """The widest names and attribute chains in ``node`` (``cfg``, ``cfg.model``) that hold a
        configuration object."""
        found = []
        seen: set[int] = set()
        stack = list(reversed(node)) if isinstance(node, list) else [node]
        while stack:
            current = stack.pop()
            if _plain_chain(current):  # its value, or none: a field's unknown value holds no part of it
                if type(current) is ast.Attribute and type(current.ctx) is not ast.Load:
                    current = current.value  # `cfg.train.x = ...`, `del cfg.train.x`: cfg.train changes
                while type(current) is ast.Attribute and current.attr == "__dict__":
                    current = current.value
                try:
                    value = self.eval(current, frame)
                except BudgetExceeded:
                    raise
                except Exception:  # noqa: BLE001 - a name mblint cannot evaluate holds nothing it knows
                    value = UNKNOWN
                if isinstance(value, Obj) and (value.cls is not None or value.label is not None) and (
                        id(value) not in seen):  # one name per object
                    seen.add(id(value))
                    found.append((current, value))
                continue
            stack.extend(reversed(list(ast.iter_child_nodes(current))))
        return found

    def havoc_target(self, target: ast.expr, frame: Frame) -> None:
        self.havoc_depth += 1
        try:
            self.store(target, UNKNOWN, frame, self.origin(target, frame))
        except Exception:  # noqa: BLE001
            pass
        finally:
            self.havoc_depth -= 1

    def havoc_stmt(self, stmt: ast.stmt, frame: Frame) -> None:
        """A statement mblint cannot follow: whatever it may store or touch becomes unknown."""
        for node in ast.walk(stmt):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    self.havoc_target(target, frame)
            elif isinstance(node, (ast.For, ast.AsyncFor)):
                self.havoc_target(node.target, frame)
            elif isinstance(node, ast.Call):
                for arg in list(node.args) + [kw.value for kw in node.keywords]:
                    try:
                        self.havoc_values([self.eval(arg, frame)], node, frame)
                    except Exception:  # noqa: BLE001
                        pass

    def havoc_values(self, values: list, site: ast.AST | None, frame: Frame | None) -> None:
        origin = self.origin(site, frame) if site is not None and frame is not None else None
        for value in values:
            if isinstance(value, Obj):
                self.havoc_obj(value, origin)

    def havoc_obj(self, obj: Obj, origin: Origin | None, seen: set | None = None) -> None:
        seen = seen if seen is not None else set()
        if obj.oid in seen:
            return
        seen.add(obj.oid)
        obj.mark_open()
        fields = obj.writable()
        children = []
        # A run of fields with the same origins (a constructor's defaults) shares one new slot.
        origins_before = slot = None
        for key, (value, origins) in list(fields.items()):
            if isinstance(value, Obj):
                children.append(key)
                self.havoc_obj(value, origin, seen)
            else:
                if origins is not origins_before:
                    origins_before, slot = origins, (UNKNOWN, origins + ((origin,) if origin else ()))
                fields[key] = slot
        obj._children = (fields, tuple(children))


def _names_a_field(node: ast.AST) -> bool:
    """A plain chain of fields (``cfg.model.x``): when its value is unknown, what is stored into
    it is an unknown value's, and the configuration objects on the way keep what they know.
    ``__dict__`` is no field: a store through it may change any field of its object."""
    while type(node) is ast.Attribute:
        if node.attr == "__dict__":
            return False
        node = node.value
    return type(node) is ast.Name


def _plain_chain(node: ast.AST) -> bool:
    """A name or an attribute chain down to a name (``cfg.model.x``): reading it runs nothing."""
    while type(node) is ast.Attribute:
        node = node.value
    return type(node) is ast.Name


_STMT_HANDLERS = _handlers(StatementsMixin, "stmt_")

