"""Text output in the style of ruff's full format."""

from __future__ import annotations

import re
from pathlib import Path

from mblint.engine import Report
from mblint.findings import Finding, Severity


def render(report: Report, show_source: bool = True) -> str:
    lines: list[str] = []
    cache: dict[str, list[str]] = {}
    for finding in report.findings:
        lines.extend(render_finding(finding, cache, show_source))
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


# Control characters from a linted file (a binary file, an escape sequence in a string) are
# shown escaped, so a file cannot drive the terminal that shows the report.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    if text.isprintable():  # every character _CONTROL matches is one isprintable() rejects
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        text)


def render_finding(finding: Finding, cache: dict, show_source: bool) -> list[str]:
    return [printable(line) for line in _render_finding(finding, cache, show_source)]


def _render_finding(finding: Finding, cache: dict, show_source: bool) -> list[str]:
    loc = finding.location
    out = [f"{loc.path}:{loc.line}:{loc.column}: {finding.rule_id} [{finding.severity.label}] {finding.message}"]
    source = _line(loc.path, loc.line, cache) if show_source else None
    if source is not None:
        gutter = " " * len(str(loc.line))
        start = max(loc.column - 1, 0)
        end = loc.end_column - 1 if loc.end_line == loc.line and loc.end_column > loc.column else len(source.rstrip())
        width = max(end - start, 1)
        out += [f"{gutter} |", f"{loc.line} | {source.rstrip()}", f"{gutter} | {' ' * start}{'^' * width} {finding.rule_id}", f"{gutter} |"]
    for related in finding.related:
        r = related.origin
        out.append(f"  = related: {r.path}:{r.line}:{r.column}: {related.message}")
    for fix in finding.fixes:
        kind = "alternative (not applied)" if fix.alternative else "fix" if fix.safe else "unsafe fix"
        out.append(f"  = {kind}: {fix.description}")
    out.append("")
    return out


def summary_line(report: Report) -> str:
    counts = {severity: 0 for severity in Severity}
    for finding in report.findings:
        counts[finding.severity] += 1
    total = len(report.findings)
    if not total:
        return f"All checks passed ({_count(report.files, 'file')}, {_count(report.resolved, 'configuration')} resolved){_hidden(report)}."
    parts = ", ".join(f"{counts[s]} {s.label}{'s' if counts[s] != 1 and s is not Severity.INFO else ''}" for s in reversed(Severity) if counts[s])
    return (f"Found {_count(total, 'finding')} ({parts}) in {_count(report.files, 'file')}, "
            f"{_count(report.resolved, 'configuration')} resolved{_hidden(report)}.")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _hidden(report: Report) -> str:
    """Suppressed and baselined counts and stale baseline entries, when there are any."""
    parts = []
    if getattr(report, "suppressed", 0):
        parts.append(f"{report.suppressed} suppressed")
    if getattr(report, "baselined", 0):
        parts.append(f"{report.baselined} in baseline")
    stale = len(getattr(report, "stale_baseline", ()))
    if stale:
        parts.append(f"{stale} stale baseline entr{'y' if stale == 1 else 'ies'}")
    return f"; {', '.join(parts)}" if parts else ""


def _line(path: str, number: int, cache: dict) -> str | None:
    if path not in cache:
        from mblint.extract.modules import SourceError, read_regular_file

        try:
            data = read_regular_file(Path(path))
            cache[path] = [] if b"\x00" in data else data.decode("utf-8-sig", errors="replace").splitlines()
        except SourceError:
            cache[path] = []
    lines = cache[path]
    return lines[number - 1] if 0 < number <= len(lines) else None
