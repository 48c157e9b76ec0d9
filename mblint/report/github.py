"""GitHub Actions workflow commands (annotations):
``::error file=F,line=L,col=C,endLine=L2,endColumn=C2,title=T::message``.

Actions shows at most 10 error and 10 warning annotations per step, so findings are written
most severe first, then a plain summary line.
"""

from __future__ import annotations

import os
from pathlib import Path

from mblint.findings import Finding, Severity
from mblint.report import printable
from mblint.report.text import summary_line
from mblint.results import Report

COMMANDS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def escape_data(text: str) -> str:
    """A command's message: control characters neutralised (``printable``), then what the
    runner decodes (``%``, CR, LF) percent-encoded."""
    return printable(text).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def workspace_path(display_path: str, root: Path | None) -> str:
    """Annotations want paths relative to the workspace (the repository root), whatever the
    working directory mblint ran in."""
    if root is None:
        return display_path
    absolute = Path(os.path.abspath(display_path))
    try:
        return absolute.relative_to(root).as_posix()
    except ValueError:
        return display_path


def annotation(finding: Finding, root: Path | None = None) -> str:
    loc = finding.location
    end_line = max(loc.end_line, loc.line)
    properties = [("file", workspace_path(loc.path, root)), ("line", str(loc.line)), ("col", str(loc.column)),
                  ("endLine", str(end_line))]
    if end_line == loc.line and loc.end_column > loc.column:
        properties.append(("endColumn", str(loc.end_column)))
    properties.append(("title", f"mblint {finding.rule_id} ({finding.rule_name})"))
    lines = [finding.message]
    for related in finding.related:
        r = related.origin
        lines.append(f"related: {r.path}:{r.line}:{r.column}: {related.message}")
    props = ",".join(f"{key}={escape_property(value)}" for key, value in properties)
    return f"::{COMMANDS[finding.severity]} {props}::" + "%0A".join(escape_data(line) for line in lines)


def render(report: Report) -> str:
    from mblint.report.sarif import repository_root

    root = repository_root()
    ordered = sorted((f for f in report.findings if not f.suppressed),
                     key=lambda f: (-int(f.severity), f.sort_key()))
    lines = [annotation(f, root) for f in ordered]
    lines.append(printable(summary_line(report)))
    return "\n".join(lines) + "\n"
