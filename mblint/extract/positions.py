"""Origins: where a value was set, numbered by the interpreter's clock."""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from mblint.extract.modules import ModuleSource
from mblint.model import Origin

if TYPE_CHECKING:
    from mblint.extract.scopes import Frame




def origin_at(node: ast.AST, source: ModuleSource, seq: int, via: tuple) -> Origin:
    line, column = node.lineno, node.col_offset
    end_line = node.end_lineno or line
    end_column = node.end_col_offset or column
    wide_lines = source.wide_lines
    if not wide_lines:  # UTF-8 byte offsets are character columns
        return Origin(source.display_path, line, column + 1, end_line, end_column + 1, "set", seq, via)
    return Origin(source.display_path, line,
                       source.char_column(line, column) if line in wide_lines else column + 1, end_line,
                       source.char_column(end_line, end_column) if end_line in wide_lines else end_column + 1,
                       "set", seq, via)


def _stamp(origin: Origin | tuple | None) -> Origin | None:
    """The origin that ``Interpreter.reserve_origin`` reserved, made now."""
    if type(origin) is tuple:
        return origin_at(*origin)
    return origin


def _with_kind(origin: Origin | None, kind: str) -> Origin | None:
    if origin is None:
        return None
    return Origin(origin.path, origin.line, origin.column, origin.end_line, origin.end_column, kind, origin.seq,
                     origin.via, origin.through)


class PositionsMixin:
    """Origins of the nodes being interpreted. Part of ``Interpreter``."""

    def origin(self, node: ast.AST | None, frame: Frame | None) -> Origin | None:
        if node is None or frame is None or not hasattr(node, "lineno"):
            return None
        self.clock += 1
        return origin_at(node, frame.scope.source, self.clock, self.call_sites)

    def reserve_origin(self, node: ast.AST, frame: Frame) -> tuple | None:
        """``origin()`` numbered now (its ``seq``) but made only if used: ``_stamp()`` makes it.
        Keyword arguments of calls other than constructors need no origin."""
        if not hasattr(node, "lineno"):
            return None
        self.clock += 1
        return (node, frame.scope.source, self.clock, self.call_sites)

