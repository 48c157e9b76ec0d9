"""Edits of Python recipe files with libcst.

Each edit names the place the value took effect by the origin's position (an assignment
statement, a ``name=value`` keyword argument, or the value of a dict literal entry) or, for an
added assignment, the recipe function. All edits of a file are located in one parse of the
original text and applied in one transformation, so positions never drift; libcst regenerates
only the nodes that are replaced, which keeps comments, quotes, blank lines, indentation and
line endings elsewhere byte-identical.
"""

from __future__ import annotations

import ast
import math
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Any, Callable

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider


class PyEditError(Exception):
    pass


TOO_DEEP = "cannot edit: the file is nested too deeply for libcst"


@dataclass(frozen=True)
class PyEdit:
    """``action``: set | rename | remove | add. ``line``/``column`` (1-based) locate the origin
    for set, rename and remove; ``function`` is the recipe function for add. ``target`` is the
    field written as Python below the config variable (``.train.micro_batch_size`` or
    ``.dataset.dataset_kwargs["pad"]``) for add."""

    action: str
    field: str
    value: Any = None
    new_field: str | None = None
    line: int = 0
    column: int = 0
    function: str = ""
    target: str = ""


@dataclass
class Target:
    """What sits at an origin: ``kind`` is assign | augassign | kwarg | dict | tuple."""

    kind: str
    statement: cst.CSTNode | None = None  # the SimpleStatementLine of an assignment
    small: cst.CSTNode | None = None  # the Assign / AnnAssign / AugAssign
    value: cst.BaseExpression | None = None  # the expression to replace for set
    name_node: cst.CSTNode | None = None  # the target / keyword / key to rename
    container: cst.CSTNode | None = None  # the Call or Dict of a kwarg / entry
    element: cst.CSTNode | None = None  # the Arg or DictElement


def py_literal(value: Any, quote: str = '"') -> str:
    """Python source for a plain value; raises PyEditError for anything else."""
    text = _literal(value, quote)
    try:
        back = ast.literal_eval(text)
    except (ValueError, SyntaxError) as error:
        raise PyEditError(f"cannot write {value!r} as Python") from error
    if back != value or type(back) is not type(value):
        raise PyEditError(f"cannot write {value!r} as Python exactly")
    return text


def _literal(value: Any, quote: str) -> str:
    if value is None or isinstance(value, (bool, int)):
        return repr(value)
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            raise PyEditError(f"cannot write {value!r} as a literal")
        return repr(value)
    if isinstance(value, str):
        if quote == '"' and '"' not in value and "\\" not in value and value.isprintable():
            return f'"{value}"'
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_literal(v, quote) for v in value) + "]"
    if isinstance(value, tuple):
        inner = ", ".join(_literal(v, quote) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_literal(k, quote)}: {_literal(v, quote)}" for k, v in value.items()) + "}"
    raise PyEditError(f"cannot write a {type(value).__name__} value as Python")


class PythonFile:
    """One parse of a file, for locating and applying edits. Positions and parents are worked
    out per top-level statement, when an edit first looks inside it: a fix touches a few
    recipe functions of a file, and libcst's position metadata of a whole file costs more
    than its parse."""

    def __init__(self, text: str) -> None:
        self.text = text
        try:
            self.module = cst.parse_module(text)
        except cst.ParserSyntaxError as error:
            raise PyEditError(f"cannot parse: {error.message}") from error
        except (RecursionError, KeyError) as error:  # libcst's visitors recurse: a deep expression
            raise PyEditError(TOO_DEEP) from error
        self.parents: dict[int, cst.CSTNode] = {}
        self._ranges: dict[cst.CSTNode, tuple[int, int, int, int]] = {}  # 1-based lines, 0-based columns
        self._by_start: dict[tuple[int, int], list[cst.CSTNode]] = {}
        self._indexed: set[int] = set()
        self._starts: list[int] | None = None
        self._statement_starts()  # code generation reaches every node: a file too deep fails here
        self.quote = '"' if text.count('"') >= text.count("'") else "'"

    def _statement_starts(self) -> list[int]:
        """The first line of each top-level statement (its leading blank and comment lines
        included), as the module's code lays them out."""
        if self._starts is None:
            line = len(self.module.header) + 1
            starts = []
            for statement in self.module.body:
                starts.append(line)
                line += self.code(statement).count("\n")
            self._starts = starts
        return self._starts

    def _statement_at(self, line: int) -> int:
        return max(0, bisect_right(self._statement_starts(), line) - 1)

    def _index(self, number: int) -> None:
        """Positions and parents of the nodes of top-level statement ``number``, from a module
        holding that statement alone (the same code, shifted by the lines above it)."""
        if number in self._indexed or number >= len(self.module.body):
            return
        alone = self.module.with_changes(header=(), body=(self.module.body[number],), footer=())
        try:
            positions = MetadataWrapper(alone, unsafe_skip_copy=True).resolve(PositionProvider)
            alone.visit(_ParentIndex(self.parents))
        except (RecursionError, KeyError) as error:
            raise PyEditError(TOO_DEEP) from error
        shift = self._statement_starts()[number] - 1
        for node, where in positions.items():
            if node is alone:
                continue
            start = (where.start.line + shift, where.start.column)
            self._ranges[node] = (*start, where.end.line + shift, where.end.column)
            self._by_start.setdefault(start, []).append(node)
        self._indexed.add(number)

    def _number_of(self, statement: cst.CSTNode) -> int:
        return next(i for i, candidate in enumerate(self.module.body) if candidate is statement)

    # ----- locating ------------------------------------------------------------------------

    def target_at(self, line: int, column: int, field_path: str) -> Target:
        """The assignment, keyword or dict entry at the origin; raises PyEditError when the
        node there is not one that sets ``field_path``'s leaf alone."""
        leaf = field_path.rsplit(".", 1)[-1]
        self._index(self._statement_at(line))
        nodes = self._by_start.get((line, column - 1), [])
        for node in nodes:
            if isinstance(node, (cst.Assign, cst.AnnAssign, cst.AugAssign)):
                return self._assign_target(node, leaf)
        for node in nodes:
            if isinstance(node, cst.Arg) and node.keyword is not None:
                if node.keyword.value != leaf:
                    raise PyEditError(f"keyword {node.keyword.value!r} is not {leaf!r}")
                return Target("kwarg", value=node.value, name_node=node.keyword,
                              container=self.parents.get(id(node)), element=node)
        for node in nodes:
            parent = self.parents.get(id(node))
            if isinstance(parent, cst.DictElement) and parent.value is node:
                key = _string_value(parent.key)
                if key != leaf:
                    raise PyEditError(f"dict key {key!r} is not {leaf!r}")
                return Target("dict", value=node, name_node=parent.key, container=self.parents.get(id(parent)),
                              element=parent)
        raise PyEditError(f"no assignment, keyword or dict entry at {line}:{column}")

    def _assign_target(self, node: cst.CSTNode, leaf: str) -> Target:
        statement = self.parents.get(id(node))
        if isinstance(node, cst.Assign):
            if len(node.targets) != 1:
                raise PyEditError("chained assignment sets several names")
            target = node.targets[0].target
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(node.value, (cst.Tuple, cst.List)):
                elements = [e.value for e in target.elements]
                values = [e.value for e in node.value.elements]
                if len(elements) != len(values) or any(isinstance(e, cst.StarredElement) for e in target.elements):
                    raise PyEditError("unpacking assignment with starred or unequal sides")
                matches = [i for i, e in enumerate(elements) if _leaf_name(e) == leaf]
                if len(matches) != 1:
                    raise PyEditError(f"{leaf!r} is not a single target of the tuple assignment")
                return Target("tuple", statement, node, values[matches[0]], elements[matches[0]])
            if _leaf_name(target) != leaf:
                raise PyEditError(f"the assignment does not set {leaf!r}")
            return Target("assign", statement, node, node.value, target)
        if node.value is None:
            raise PyEditError("annotation without a value")
        if _leaf_name(node.target) != leaf:
            raise PyEditError(f"the assignment does not set {leaf!r}")
        kind = "augassign" if isinstance(node, cst.AugAssign) else "assign"
        return Target(kind, statement, node, node.value, node.target)

    def function(self, name: str) -> cst.FunctionDef:
        for statement in self.module.body:
            if isinstance(statement, cst.FunctionDef) and statement.name.value == name:
                return statement
        raise PyEditError(f"no top-level function {name!r}")

    def contains(self, statement: cst.CSTNode, line: int, column: int) -> bool:
        """Whether top-level ``statement`` spans the 1-based ``line``:``column``."""
        self._index(self._number_of(statement))
        start_line, start_column, end_line, end_column = self._ranges[statement]
        return (start_line, start_column) <= (line, column - 1) <= (end_line, end_column)

    def code(self, node: cst.CSTNode) -> str:
        try:
            return self.module.code_for_node(node)
        except RecursionError as error:  # libcst's code generation recurses too
            raise PyEditError(TOO_DEEP) from error

    # ----- applying ------------------------------------------------------------------------

    def apply(self, edits: list[PyEdit]) -> str:
        """The file's text with ``edits`` made; raises PyEditError when one cannot be made
        exactly or the edited file does not parse."""
        edited = self._edited_statements(self._plan(edits))
        body = list(self.module.body)
        for number, statement in edited.items():
            body[number] = statement
        return self._parsed_code(self.module.with_changes(body=body), 1)

    def check(self, edits: list[PyEdit]) -> None:
        """What ``apply`` would refuse, without generating the whole file: each edited
        top-level statement must parse on its own (``apply`` parses the whole file later)."""
        for number, statement in self._edited_statements(self._plan(edits)).items():
            alone = self.module.with_changes(header=(), body=(statement,), footer=())
            self._parsed_code(alone, self._statement_starts()[number])

    def _plan(self, edits: list[PyEdit]) -> "_Plan":
        plan = _Plan()
        for edit in edits:
            if edit.action == "set":
                self._plan_set(edit, plan)
            elif edit.action == "rename":
                self._plan_rename(edit, plan)
            elif edit.action == "remove":
                self._plan_remove(edit, plan)
            elif edit.action == "add":
                self._plan_add(edit, plan)
            else:
                raise PyEditError(f"unsupported action {edit.action!r}")
        return plan

    def _edited_statements(self, plan: "_Plan") -> dict[int, cst.CSTNode]:
        transform = _Apply(plan)
        try:  # the plan's nodes all lie in these statements
            return {number: self.module.body[number].visit(transform) for number in sorted(plan.statements)}
        except (RecursionError, MemoryError, ValueError) as error:
            raise PyEditError(f"the edited file cannot be checked: {type(error).__name__}") from error

    @staticmethod
    def _parsed_code(module: cst.Module, first_line: int) -> str:
        """``module``'s code, checked by Python's parser (its first line is ``first_line`` of
        the file, for the message)."""
        try:
            text = module.code
            ast.parse(text)
        except SyntaxError as error:
            line = (error.lineno or 1) + first_line - 1
            raise PyEditError(f"the edited file does not parse: {error.msg} (line {line})") from error
        except (RecursionError, MemoryError, ValueError) as error:
            raise PyEditError(f"the edited file cannot be checked: {type(error).__name__}") from error
        return text

    def _plan_set(self, edit: PyEdit, plan: "_Plan") -> None:
        target = self.target_at(edit.line, edit.column, edit.field)
        plan.statements.add(self._statement_at(edit.line))
        old = target.value
        quote = _quote_of(old) or self.quote
        new_value = cst.parse_expression(py_literal(edit.value, quote))
        if target.kind == "augassign":
            small = target.small
            plan.replace(small, lambda updated: cst.Assign(
                targets=[cst.AssignTarget(updated.target)], value=new_value))
            return
        plan.replace(old, lambda updated: new_value.with_changes(lpar=updated.lpar, rpar=updated.rpar)
                     if isinstance(updated, type(new_value)) and hasattr(new_value, "lpar") else new_value)

    def _plan_rename(self, edit: PyEdit, plan: "_Plan") -> None:
        old_parts = edit.field.split(".")
        new_parts = (edit.new_field or "").split(".")
        if not all(p.isidentifier() for p in new_parts):
            raise PyEditError(f"{edit.new_field!r} is not a dotted Python name")
        target = self.target_at(edit.line, edit.column, edit.field)
        plan.statements.add(self._statement_at(edit.line))
        if target.kind in ("kwarg", "dict"):
            if old_parts[:-1] != new_parts[:-1]:
                raise PyEditError("a keyword or dict key can only be renamed under the same parent")
            if target.kind == "kwarg":
                plan.replace(target.name_node, lambda updated: updated.with_changes(value=new_parts[-1]))
            else:
                quote = _quote_of(target.name_node) or self.quote
                plan.replace(target.name_node, lambda updated: cst.SimpleString(py_literal(new_parts[-1], quote)))
            self._plan_new_value(edit, target, plan)
            return
        chain = _attr_chain(target.name_node)
        if chain is None:
            raise PyEditError("the assignment target is not an attribute chain")
        base, attrs = chain
        k = len(attrs)
        if k > len(old_parts) or old_parts[-k:] != attrs:
            raise PyEditError("the assignment target does not spell the field")
        keep = len(old_parts) - k
        if old_parts[:keep] != new_parts[:keep] or len(new_parts) <= keep:
            raise PyEditError("the new field lies outside the object this assignment reaches")
        base_code = self.code(base)
        new_target = cst.parse_expression(base_code + "." + ".".join(new_parts[keep:]))
        plan.replace(target.name_node, lambda updated: new_target)
        self._plan_new_value(edit, target, plan)

    def _plan_new_value(self, edit: PyEdit, target, plan: "_Plan") -> None:
        """A rename that also changes the value (``enable_cuda_graph = True`` ->
        ``cuda_graph_impl = "local"``)."""
        if edit.value is None:
            return
        if target.kind == "augassign":
            raise PyEditError("an augmented assignment cannot take a new value")
        quote = _quote_of(target.value) or self.quote
        new_value = cst.parse_expression(py_literal(edit.value, quote))
        plan.replace(target.value, lambda updated: new_value)

    def _plan_remove(self, edit: PyEdit, plan: "_Plan") -> None:
        target = self.target_at(edit.line, edit.column, edit.field)
        plan.statements.add(self._statement_at(edit.line))
        if target.kind in ("kwarg", "dict"):
            plan.remove_element(target.container, target.element)
            return
        if target.kind == "tuple":
            raise PyEditError("cannot remove one target of a tuple assignment")
        statement = target.statement
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            raise PyEditError("the assignment shares its line with other statements")
        block = self.parents.get(id(statement))
        if not isinstance(block, cst.IndentedBlock):
            raise PyEditError("the assignment is not inside a function or block")
        plan.remove_statement(block, statement)

    def _plan_add(self, edit: PyEdit, plan: "_Plan") -> None:
        function = self.function(edit.function)
        plan.statements.add(self._number_of(function))
        body = function.body
        if not isinstance(body, cst.IndentedBlock) or not body.body:
            raise PyEditError(f"{edit.function} has no indented body")
        statements = list(body.body)
        last = statements[-1]
        returned = _returned_expression(last)
        if returned is None:
            raise PyEditError(f"{edit.function} does not end with a return statement")
        literal = py_literal(edit.value, self.quote)
        config = self.module.config_for_parsing
        if isinstance(returned, cst.Name):
            var = returned.value
            seed = None
            for index, statement in enumerate(statements[:-1]):
                if _assigns_name(statement, var):
                    seed = index
            if seed is None:
                raise PyEditError(f"no assignment of {var!r} in {edit.function}")
            anchor = seed
            for index in range(seed + 1, len(statements) - 1):
                if _related(self.code(statements[index]), var, edit.field):
                    anchor = index
            new = cst.parse_statement(f"{var}{edit.target} = {literal}\n", config)
            plan.insert(body, statements[anchor], new)
            return
        var = _fresh_name(self.code(function))
        new = cst.parse_statement(f"{var}{edit.target} = {literal}\n", config)
        plan.rewrite_return(body, last, var, new)


class ParsedFiles:
    """The ``PythonFile`` of each file's current text, shared by the planner and the writer
    of a fix run: a text is parsed once however often its edits are planned and applied."""

    def __init__(self) -> None:
        self._by_path: dict[Any, tuple[str, PythonFile]] = {}

    def get(self, path: Any, text: str) -> PythonFile:
        cached = self._by_path.get(path)
        if cached is None or cached[0] != text:
            cached = self._by_path[path] = (text, PythonFile(text))
        return cached[1]


def _fresh_name(code: str) -> str:
    names = {node.id for node in ast.walk(ast.parse(_dedent_def(code))) if isinstance(node, ast.Name)}
    for candidate in ("cfg", "config", "_cfg", "_config"):
        if candidate not in names:
            return candidate
    raise PyEditError("no free name for the configuration variable")


def _dedent_def(code: str) -> str:
    import textwrap

    return textwrap.dedent(code)


def _returned_expression(statement: cst.CSTNode) -> cst.BaseExpression | None:
    if isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
        small = statement.body[0]
        if isinstance(small, cst.Return) and small.value is not None:
            return small.value
    return None


def _assigns_name(statement: cst.CSTNode, var: str) -> bool:
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign):
            if any(isinstance(t.target, cst.Name) and t.target.value == var for t in small.targets):
                return True
        elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.target.value == var:
            return small.value is not None
    return False


def _related(code: str, var: str, field_path: str) -> bool:
    """Does a statement set something in the field's section (or replace a node on its path),
    reassign the config variable, or hand it to a call that may change it?"""
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return True
    parts = field_path.split(".")
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name) and sub.id == var and isinstance(sub.ctx, ast.Store):
                        return True
                chain = _ast_chain(target)
                if chain and chain[0] == var and len(chain) > 1 and chain[1] == parts[0]:
                    return True
        elif isinstance(node, ast.Call):
            for arg in list(node.args) + [k.value for k in node.keywords]:
                if isinstance(arg, ast.Name) and arg.id == var:
                    return True
    return False


def _ast_chain(node: ast.AST) -> list[str] | None:
    names = []
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        if isinstance(node, ast.Attribute):
            names.append(node.attr)
        elif isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            names.append(node.slice.value)
        else:
            return None
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id] + names[::-1]
    return None


def _leaf_name(node: cst.CSTNode) -> str | None:
    if isinstance(node, cst.Attribute):
        return node.attr.value
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        index = node.slice[0].slice
        if isinstance(index, cst.Index):
            return _string_value(index.value)
    return None


def _string_value(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        try:
            value = ast.literal_eval(node.value)
        except (ValueError, SyntaxError):
            return None
        return value if isinstance(value, str) else None
    return None


def _quote_of(node: cst.CSTNode | None) -> str | None:
    if isinstance(node, cst.SimpleString):
        text = node.value.lstrip("rRbBuUfF")
        return text[:1] if text[:1] in ("'", '"') else None
    return None


def _attr_chain(node: cst.CSTNode) -> tuple[cst.CSTNode, list[str]] | None:
    names = []
    while isinstance(node, cst.Attribute):
        names.append(node.attr.value)
        node = node.value
    if not names:
        return None
    return node, names[::-1]


class _ParentIndex(cst.CSTVisitor):
    def __init__(self, parents: dict) -> None:
        super().__init__()
        self.parents = parents
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.stack:
            self.parents[id(node)] = self.stack[-1]
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.stack.pop()


@dataclass
class _Plan:
    replacements: dict[int, Callable] = field(default_factory=dict)
    removed_statements: dict[int, set[int]] = field(default_factory=dict)
    removed_elements: dict[int, set[int]] = field(default_factory=dict)
    inserts: dict[int, dict[int, list]] = field(default_factory=dict)
    returns: dict[int, tuple] = field(default_factory=dict)
    touched: set[int] = field(default_factory=set)
    statements: set[int] = field(default_factory=set)  # numbers of the top-level statements edited

    def _claim(self, node: cst.CSTNode) -> None:
        if id(node) in self.touched:
            raise PyEditError("two edits touch the same code")
        self.touched.add(id(node))

    def replace(self, node: cst.CSTNode, make: Callable) -> None:
        self._claim(node)
        self.replacements[id(node)] = make

    def remove_statement(self, block: cst.IndentedBlock, statement: cst.CSTNode) -> None:
        self._claim(statement)
        removed = self.removed_statements.setdefault(id(block), set())
        removed.add(id(statement))
        if len(removed) >= len(block.body):
            raise PyEditError("removing the assignment would leave an empty block")

    def remove_element(self, container: cst.CSTNode, element: cst.CSTNode) -> None:
        self._claim(element)
        self.removed_elements.setdefault(id(container), set()).add(id(element))

    def insert(self, block: cst.IndentedBlock, after: cst.CSTNode, statement: cst.CSTNode) -> None:
        """``statement`` after ``after`` (in its place when ``after`` is removed)."""
        self.inserts.setdefault(id(block), {}).setdefault(id(after), []).append(statement)

    def rewrite_return(self, block: cst.IndentedBlock, last: cst.CSTNode, var: str, statement: cst.CSTNode) -> None:
        if id(block) in self.returns:
            existing = self.returns[id(block)]
            existing[2].append(statement)
            return
        self._claim(last)
        self.returns[id(block)] = (id(last), var, [statement])


class _Apply(cst.CSTTransformer):
    def __init__(self, plan: _Plan) -> None:
        super().__init__()
        self.plan = plan
        self.old_ids: dict[int, int] = {}

    def on_leave(self, original_node, updated_node):
        plan = self.plan
        result = updated_node
        make = plan.replacements.get(id(original_node))
        if make is not None:
            result = make(updated_node)
        key = id(original_node)
        if key in plan.removed_elements and isinstance(result, (cst.Call, cst.Dict)):
            result = _without_elements(original_node, result, plan.removed_elements[key])
        if isinstance(original_node, cst.IndentedBlock) and (
                key in plan.removed_statements or key in plan.inserts or key in plan.returns):
            result = _edit_block(original_node, result, plan)
        return result


def _without_elements(original, updated, removed: set[int]):
    if isinstance(original, cst.Call):
        old, new = list(original.args), list(updated.args)
    else:
        old, new = list(original.elements), list(updated.elements)
    kept = []
    for index, (o, n) in enumerate(zip(old, new)):
        if id(o) in removed:
            if index == len(old) - 1 and kept:
                kept[-1] = kept[-1].with_changes(comma=n.comma)
            continue
        kept.append(n)
    if isinstance(original, cst.Call):
        return updated.with_changes(args=kept)
    return updated.with_changes(elements=kept)


def _edit_block(original: cst.IndentedBlock, updated: cst.IndentedBlock, plan: _Plan):
    key = id(original)
    removed = plan.removed_statements.get(key, set())
    inserts = plan.inserts.get(key, {})
    rewrite = plan.returns.get(key)
    body = []
    carried = ()
    for old, new in zip(original.body, updated.body):
        if id(old) in removed:
            carried = tuple(getattr(new, "leading_lines", ()))
            added = inserts.get(id(old), [])
            if added and carried:  # the comment above a replaced line stays above its replacement
                added = [added[0].with_changes(leading_lines=carried + tuple(added[0].leading_lines)), *added[1:]]
                carried = ()
            _add_after(body, added)
            continue
        if carried and hasattr(new, "leading_lines"):
            new = new.with_changes(leading_lines=tuple(carried) + tuple(new.leading_lines))
            carried = ()
        if rewrite is not None and id(old) == rewrite[0]:
            _, var, added = rewrite
            small = new.body[0]
            assign = cst.SimpleStatementLine(
                body=[cst.Assign(targets=[cst.AssignTarget(cst.Name(var))], value=small.value)],
                leading_lines=new.leading_lines, trailing_whitespace=new.trailing_whitespace)
            body.append(assign)
            body.extend(added)
            body.append(cst.SimpleStatementLine(body=[small.with_changes(value=cst.Name(var))]))
            continue
        body.append(new)
        _add_after(body, inserts.get(id(old), []))
    return updated.with_changes(body=body)


def _add_after(body: list, statements: list) -> None:
    body.extend(statements)
