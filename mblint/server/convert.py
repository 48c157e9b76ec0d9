"""mblint's places and findings as LSP values. mblint counts lines as Python's tokenizer does
(``source_lines``) and columns in characters, 1-based with an exclusive end; LSP counts from 0
in the client's units (UTF-16 unless the client chose another), which the position codec gives."""

from __future__ import annotations

import os
from pathlib import Path

from lsprotocol import types

from mblint.extract.modules import source_lines
from mblint.findings import Finding, Severity
from mblint.model import Origin
from mblint.report import printable
from mblint.results import FileError

SOURCE = "mblint"
SEVERITIES = {Severity.ERROR: types.DiagnosticSeverity.Error, Severity.WARNING: types.DiagnosticSeverity.Warning,
              Severity.INFO: types.DiagnosticSeverity.Information}


class Places:
    """Converts places in one file (its text as linted) to LSP ranges, and display paths to URIs."""

    def __init__(self, text: str, codec, root: Path) -> None:
        self.lines = [line + "\n" for line in source_lines(text)] or [""]
        self.codec = codec
        self.root = root

    def range_of(self, line: int, column: int, end_line: int | None = None, end_column: int | None = None,
                 lines: list[str] | None = None) -> types.Range:
        lines = self.lines if lines is None else lines
        start = types.Position(line=max(line - 1, 0), character=max(column - 1, 0))
        end = types.Position(line=max((end_line or line) - 1, 0), character=max((end_column or column) - 1, 0))
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return self.codec.range_to_client_units(lines, types.Range(start=start, end=end))

    def origin_range(self, origin: Origin) -> types.Range:
        return self.range_of(origin.line, origin.column, origin.end_line, origin.end_column)

    def uri_of(self, display: str) -> str:
        return Path(os.path.normpath(self.root / display)).as_uri()

    def other_file_range(self, origin: Origin) -> types.Range:
        """A place in another file: its characters are taken as the client's units (they differ
        only past the Basic Multilingual Plane, on lines mblint does not hold here)."""
        return types.Range(start=types.Position(line=max(origin.line - 1, 0), character=max(origin.column - 1, 0)),
                           end=types.Position(line=max(origin.end_line - 1, 0),
                                              character=max(origin.end_column - 1, 0)))


def diagnostic(finding: Finding, places: Places, display: str, help_uri: str | None = None) -> types.Diagnostic:
    related = []
    for item in finding.related:
        origin = item.origin
        if origin.line < 1:
            continue
        where = places.origin_range(origin) if origin.path == display else places.other_file_range(origin)
        related.append(types.DiagnosticRelatedInformation(
            location=types.Location(uri=places.uri_of(origin.path), range=where), message=printable(item.message)))
    message = finding.message
    if finding.recipes:
        shown = ", ".join(finding.recipes[:3])
        message += f" (in {len(finding.recipes)} recipes: {shown}{', ...' if len(finding.recipes) > 3 else ''})"
    fixes = finding.applicable_fixes
    return types.Diagnostic(
        range=places.origin_range(finding.location),
        message=printable(message),
        severity=SEVERITIES[finding.severity],
        code=finding.rule_id,
        code_description=types.CodeDescription(href=help_uri) if help_uri else None,
        source=SOURCE,
        related_information=related or None,
        data={"identity": list(finding.identity()), "fixable": bool(fixes),
              "safe": bool(fixes) and all(intent.safe for intent in fixes)},
    )


def error_diagnostic(error: FileError, places: Places) -> types.Diagnostic:
    """An error of the run (a rule that crashed, settings that cannot be read): reported on
    the document, at its line when it has one, never dropped."""
    line = error.line if error.line >= 1 else 1
    return types.Diagnostic(range=places.range_of(line, max(error.column, 1), line, max(error.column, 1) + 1),
                            message=printable(f"mblint: error: {error}"), severity=types.DiagnosticSeverity.Error,
                            source=SOURCE)
