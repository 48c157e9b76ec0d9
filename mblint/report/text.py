"""Text output in the style of ruff's full format."""

from __future__ import annotations

from pathlib import Path

from mblint.coverage import jobs_not_fully_checked
from mblint.findings import Finding, Severity
from mblint.report import all_printable, printable  # noqa: F401 - printable: imported from here too
from mblint.results import Report


def render(report: Report, show_source: bool = True) -> str:
    confinement = getattr(report, "confinement", None)
    sources = source_lines(report.findings, confinement) if show_source else {}
    lines: list[str] = []
    for finding in report.findings:
        lines.extend(_render_finding(finding, sources, show_source))
    lines.append(summary_line(report))
    lines.extend(fix_lines(report))
    lines.extend(schema_lines(report))
    if not all_printable("".join(lines)):  # one test of the whole text (every line, most often)
        lines = [printable(line) for line in lines]
    return "\n".join(lines) + "\n"


def render_concise(report: Report) -> str:
    """One line a finding (``path:line:col: ID [severity] message``), then the summary."""
    lines = [_header(finding) for finding in report.findings]
    lines.append(summary_line(report))
    lines.extend(fix_lines(report))
    lines.extend(schema_lines(report))
    if not all_printable("".join(lines)):
        lines = [printable(line) for line in lines]
    return "\n".join(lines) + "\n"


def _header(finding: Finding) -> str:
    loc = finding.location
    return f"{loc.path}:{loc.line}:{loc.column}: {finding.rule_id} [{finding.severity.label}] {finding.message}"


def _render_finding(finding: Finding, sources: dict[str, dict[int, str]], show_source: bool) -> list[str]:
    loc = finding.location
    out = [_header(finding)]
    source = sources[loc.path].get(loc.line) if show_source else None
    if source is not None:
        gutter = " " * len(str(loc.line))
        start = max(loc.column - 1, 0)
        end = loc.end_column - 1 if loc.end_line == loc.line and loc.end_column > loc.column else len(source.rstrip())
        width = max(end - start, 1)
        out += [f"{gutter} |", f"{loc.line} | {source.rstrip()}", f"{gutter} | {' ' * start}{'^' * width} {finding.rule_id}", f"{gutter} |"]
    for related in finding.related:
        r = related.origin
        out.append(f"  = related: {r.path}:{r.line}:{r.column}: {related.message}")
    if finding.recipes:
        out.append(f"  = {recipe_count(finding.recipes)}")
    for fix in finding.fixes:
        kind = "alternative (not applied)" if fix.alternative else "fix" if fix.safe else "unsafe fix"
        out.append(f"  = {kind}: {fix.description}")
    out.append("")
    return out


SHOWN_RECIPES = 3


def recipe_count(recipes: tuple[str, ...]) -> str:
    """How many recipes a finding stands for, and the functions of the first few (the JSON
    output lists every one as ``path::function``)."""
    shown = ", ".join(recipe.rpartition("::")[2] for recipe in recipes[:SHOWN_RECIPES])
    more = len(recipes) - SHOWN_RECIPES
    return f"stands for {len(recipes)} recipes: {shown}" + (f" and {more} more" if more > 0 else "")


def summary_line(report: Report) -> str:
    """"All checks passed" only when every file given was analysed, no job has a gap and nothing
    stopped mblint."""
    counts = {severity: 0 for severity in Severity}
    for finding in report.findings:
        counts[finding.severity] += 1
    total = len(report.findings)
    scope = f"{_count(report.files, 'file')}, {_count(report.resolved, 'configuration')} resolved"
    unchecked = _unchecked(report)
    if not total:
        opening = "No findings" if unchecked else "All checks passed"
        return f"{opening} ({scope}{unchecked}){_hidden(report)}."
    parts = ", ".join(f"{counts[s]} {s.label}{'s' if counts[s] != 1 and s is not Severity.INFO else ''}" for s in reversed(Severity) if counts[s])
    return f"Found {_count(total, 'finding')} ({parts}) in {scope}{unchecked}{_hidden(report)}."


def fix_lines(report: Report) -> list[str]:
    """How many findings ``--fix`` would fix and how many more ``--unsafe-fixes`` would, in
    ruff's words (a finding counts once, with all its fixes; alternatives are never applied).
    With ``report.unsafe_fixes`` (the run was given --unsafe-fixes) every fix counts as fixable."""
    safe = unsafe = 0
    for finding in report.findings:
        intents = finding.applicable_fixes
        if intents and all(intent.safe for intent in intents):
            safe += 1
        elif intents:
            unsafe += 1
    if getattr(report, "unsafe_fixes", False):
        safe, unsafe = safe + unsafe, 0
    hidden = f"{unsafe} unsafe fix{'es' if unsafe != 1 else ''} available with `--fix --unsafe-fixes`"
    if safe and unsafe:
        return [f"[*] {safe} fixable with `--fix` ({hidden})."]
    if safe:
        return [f"[*] {safe} fixable with `--fix`."]
    return [f"{hidden}."] if unsafe else []


def _unchecked(report: Report) -> str:
    """What was not analysed, the jobs not fully checked and the errors that stopped mblint,
    when there are any."""
    parts = []
    jobs, reasons = jobs_not_fully_checked(report)
    if jobs:
        names = {rule.id: rule.name for rule in getattr(report, "rules", ())}
        why = ", ".join(f"{rule_id} {names.get(rule_id, '')}: {count}".replace(" :", ":")
                        for rule_id, count in reasons.items())
        parts.append(f"{_count(jobs, 'job')} not fully checked ({why})")
    not_analysed = sorted({path for path, _ in getattr(report, "not_analysed", ())})
    if not_analysed:
        names = ", ".join(not_analysed[:3]) + (", ..." if len(not_analysed) > 3 else "")
        parts.append(f"{_count(len(not_analysed), 'file')} not analysed: {names}")
    if report.errors:
        parts.append(f"{_count(len(report.errors), 'error')} (below) stopped mblint")
    return f"; {'; '.join(parts)}" if parts else ""


def schema_lines(report: Report) -> list[str]:
    """Which Megatron-Bridge version and schema the recipes were linted against."""
    return [f"Linted against {describe_schema(schema)}." for schema in getattr(report, "schemas", ())]


def describe_schema(schema: dict) -> str:
    """"Megatron-Bridge 0.6.2 (bundled schema; Megatron-Core 0.19.2)" and the like."""
    source = schema["source"]
    core = schema["megatron_core_version"]
    core_text = f"Megatron-Core facts of {core}" if source.startswith("derived") else f"Megatron-Core {core}"
    return f"Megatron-Bridge {schema['megatron_bridge_version']} ({source} schema; {core_text})"


_LEVEL_COLOURS = {"error": "red", "warning": "yellow", "info": "blue"}


def colourise(text: str) -> str:
    """The rendered (already neutralised) report with ANSI colours, as ruff shows it: the
    location bold, the rule id in its severity's colour, the carets red, the summary bold."""
    import re

    import click

    def header(match: re.Match) -> str:
        colour = _LEVEL_COLOURS[match.group(3)]
        return (f"{click.style(match.group(1), bold=True)} {click.style(match.group(2), fg=colour, bold=True)} "
                f"[{click.style(match.group(3), fg=colour)}]")

    text = re.sub(r"^(\S.*?:\d+:\d+:) ([A-Z]{2,4}\d{3}) \[(error|warning|info)\]", header, text, flags=re.M)
    text = re.sub(r"^(\s*\| *)(\^+ [A-Z]{2,4}\d{3})$",
                  lambda m: m.group(1) + click.style(m.group(2), fg="red", bold=True), text, flags=re.M)
    return re.sub(r"^(All checks passed|No findings|Found \d+ findings?)",
                  lambda m: click.style(m.group(1), bold=True), text, flags=re.M)


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


def source_lines(findings: list[Finding], confinement=None) -> dict[str, dict[int, str]]:
    """The text of each line that ``findings`` point at, by path and line number. Each file is
    read once, and its other lines are dropped before the next file is read. A file outside
    ``confinement`` (mblint.paths.Confinement: the project and its search paths) is never
    quoted."""
    wanted: dict[str, set[int]] = {}
    for finding in findings:
        wanted.setdefault(finding.location.path, set()).add(finding.location.line)
    return {path: _file_lines(path, numbers) if confinement is None or confinement.allows(path) else {}
            for path, numbers in wanted.items()}


_BOM = b"\xef\xbb\xbf"


def _file_lines(path: str, numbers: set[int]) -> dict[int, str]:
    """Lines ``numbers`` of the file, as Python's tokenizer numbers them (``source_lines``: a
    form feed or U+2028 in a comment ends no line), UTF-8, a leading BOM dropped, bad bytes
    replaced. Where the file up to the last line wanted
    breaks lines at b"\n" alone, only that part is split, as bytes, and only the lines wanted
    are decoded (a bad UTF-8 sequence never spans b"\n", which no multi-byte sequence holds)."""
    from mblint.extract.modules import SOURCE_OVERLAY, SourceError, read_regular_file, source_lines

    try:  # the text standing in for the file (the source read from stdin), else the file
        overlaid = SOURCE_OVERLAY.get(Path(path).resolve()) if SOURCE_OVERLAY else None
        data = overlaid.encode("utf-8") if overlaid is not None else read_regular_file(Path(path))
    except SourceError:
        return {}
    if b"\x00" in data:
        return {}
    if data.startswith(_BOM):
        data = data[len(_BOM):]
    parts = _lines_up_to(data, max(numbers))
    if parts is None:
        lines = source_lines(data.decode("utf-8", errors="replace"))
        return {number: lines[number - 1] for number in numbers if 0 < number <= len(lines)}
    return {number: parts[number - 1].decode("utf-8", errors="replace")
            for number in numbers if 0 < number <= len(parts)}


def _lines_up_to(data: bytes, last: int) -> list[bytes] | None:
    """Lines 1 to ``last`` of ``data`` split at b"\n" (fewer at its end); None when other
    characters break lines there."""
    parts = data.split(b"\n", max(last, 0))
    end = len(data)  # of the part holding those lines
    if len(parts) > last:  # the lines up to the last wanted, each ended by b"\n", and the rest
        end -= len(parts[-1])
        del parts[last:]
    elif not parts[-1]:  # the whole file: an empty piece after its last b"\n" is no line
        parts.pop()
    if data.find(b"\r", 0, end) >= 0:  # the only other line break (with "\r\n")
        return None
    return parts
