"""Suppressions: ``# mblint: ignore[ID, ...] reason`` on a line (Python: any line of the
statement holding the finding; YAML: the key's line), ``# mblint: ignore-file[ID, ...]`` or
``# mblint: ignore-file`` anywhere in a file, and ``per-file-ignores`` from the settings.

``# noqa: ID`` naming an mblint rule suppresses nothing and is reported as SY004 with the
``# mblint: ignore[ID]`` to write instead. noqa belongs to ruff and flake8: a bare ``# noqa``
or one written for them (``# noqa: E501``) would otherwise hide mblint's findings on that line
too, and ruff reports the codes it does not know in a noqa (RUF100). A noqa naming only
other tools' codes is left alone.

A suppression that suppresses nothing is reported as SY003 (like ruff's RUF100) and a
malformed ``# mblint:`` comment as SY004. Suppressed findings never reach reporters.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path
from typing import Any, Iterable, Protocol

from mblint.findings import Finding
from mblint.model import Origin
from mblint.results import Report
from mblint.rule import Rule

# Patterns, compiled (and kept) by the re module on first use: only files that mention
# "mblint" are searched for directives, most runs never need them.
DIRECTIVE = r"#\s*mblint\s*:\s*(?P<body>.*?)\s*$"
YAML_COMMENT = r"(?:^|\s)(#\s*mblint\s*:.*?)\s*$"
KNOWN_OTHER = r"^(world[-_]size\s*=\s*\d+|recipe\s*=\s*\S+)\s*$"
IGNORE = r"^(?P<kind>ignore-file|ignore)(?P<after>.*)$"
UNUSED_SUPPRESSION = "SY003"
INVALID_SUPPRESSION = "SY004"
NOQA = r"#\s*noqa\s*:\s*(?P<codes>[A-Za-z0-9]+(?:[\s,]+[A-Za-z0-9]+)*)"
COMPOUND = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.If, ast.For, ast.AsyncFor, ast.While,
            ast.With, ast.AsyncWith, ast.Try) + ((ast.Match,) if hasattr(ast, "Match") else ()) + (
            (ast.TryStar,) if hasattr(ast, "TryStar") else ())


class Directive:
    """One ``# mblint: ignore`` / ``ignore-file`` comment and the codes it names (``codes``
    empty: every rule, ignore-file only)."""

    __slots__ = ("line", "column", "end_column", "file_level", "codes", "used")

    def __init__(self, line: int, column: int, end_column: int, file_level: bool, codes: tuple[str, ...],
                 used: set[str] | None = None) -> None:
        self.line = line
        self.column = column
        self.end_column = end_column
        self.file_level = file_level
        self.codes = codes
        self.used = set() if used is None else used

    def covers(self, finding: Finding, aliases: dict[str, str]) -> str | None:
        if not self.codes:
            return "*"
        for code in self.codes:
            if aliases.get(code, code) == finding.rule_id:
                return code
        return None


class FileDirectives:
    """A file's suppression comments, the malformed ones, and its statement line ranges."""

    __slots__ = ("directives", "invalid", "ranges")

    def __init__(self, directives: list[Directive] | None = None,
                 invalid: list[tuple[int, int, int, str]] | None = None,
                 ranges: list[tuple[int, int]] | None = None) -> None:
        self.directives = [] if directives is None else directives
        self.invalid = [] if invalid is None else invalid  # line, col, end, message
        self.ranges = [] if ranges is None else ranges  # statement line ranges (Python)

    def statement_range(self, line: int) -> tuple[int, int]:
        best = (line, line)
        for start, end in self.ranges:
            if start <= line <= end and (best == (line, line) or end - start < best[1] - best[0]):
                best = (start, end)
        return best


def parse_directives(path: Path, aliases: dict[str, str]) -> FileDirectives:
    from mblint.extract.modules import SourceError, read_source

    try:
        text = read_source(path)
    except (SourceError, OSError):
        return FileDirectives()
    result = FileDirectives()
    from mblint.extract.modules import may_hold_directives

    if not may_hold_directives(text):
        return result  # no directive can be there; tokenizing is the expensive part
    if path.suffix == ".py":
        comments = _python_comments(text)
        result.ranges = _statement_ranges(text)
    else:
        comments = _yaml_comments(text)
    for line, column, comment in comments:
        if path.suffix == ".py":
            _noqa_naming_rules(comment, line, column, aliases, result)
        match = re.search(DIRECTIVE, comment)
        if match is None:
            continue
        column += match.start()
        end = column + len(comment) - match.start()
        _parse_one(match.group("body"), line, column, end, aliases, result)
    return result


def _parse_one(body: str, line: int, column: int, end: int, aliases: dict, result: FileDirectives) -> None:
    def invalid(message: str) -> None:
        result.invalid.append((line, column, end, message))

    if re.match(KNOWN_OTHER, body):
        return
    match = re.match(IGNORE, body)
    if match is None:
        invalid(f"unknown mblint directive '{body.split()[0] if body.split() else ''}'; expected "
                "ignore[ID, ...], ignore-file[ID, ...], world-size=N or recipe=PATH::FUNCTION")
        return
    kind, after = match.group("kind"), match.group("after")
    codes: tuple[str, ...] = ()
    stripped = after.lstrip()
    if stripped.startswith("["):
        close = stripped.find("]")
        if close < 0:
            invalid(f"'{kind}[' is not closed with ']'")
            return
        raw = [c.strip() for c in stripped[1:close].split(",")]
        if not any(raw):
            invalid(f"'{kind}[]' names no rule ids")
            return
        unknown = [c for c in raw if c and c.upper() not in aliases and c not in aliases]
        if unknown:
            invalid(f"'{kind}[...]' names unknown rule id{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}")
        codes = tuple(c.upper() if c.upper() in aliases else c for c in raw if c and c not in unknown)
        if not codes:
            return
    elif after and not after[:1].isspace():
        invalid(f"unknown mblint directive '{kind}{after.split()[0]}'")
        return
    elif kind == "ignore":
        invalid("'ignore' needs the rule ids to suppress: # mblint: ignore[ID, ...] reason")
        return
    result.directives.append(Directive(line, column, end, kind == "ignore-file", codes))


def _noqa_naming_rules(comment: str, line: int, column: int, aliases: dict, result: FileDirectives) -> None:
    """A ``# noqa: ...`` naming mblint rule ids: SY004, with the comment to write instead."""
    match = re.search(NOQA, comment, re.IGNORECASE)
    if match is None:
        return
    ids = [code.upper() for code in re.split(r"[\s,]+", match.group("codes"))
           if code.upper() in aliases and aliases[code.upper()] == code.upper()]
    if not ids:
        return
    names = ", ".join(dict.fromkeys(ids))
    result.invalid.append((line, column + match.start(), column + match.end(),
                           f"'# noqa: {names}' does not suppress mblint findings (noqa is ruff's and flake8's); "
                           f"write '# mblint: ignore[{names}] reason'"))


def _python_comments(text: str) -> list[tuple[int, int, str]]:
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT and ("mblint" in token.string or "noqa" in token.string.lower()):
                found.append((token.start[0], token.start[1] + 1, token.string))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass
    return found


def _yaml_comments(text: str) -> list[tuple[int, int, str]]:
    found = []
    from mblint.extract.modules import source_lines

    for number, line in enumerate(source_lines(text), start=1):
        if "mblint" not in line:
            continue
        match = re.search(YAML_COMMENT, line)
        if match:
            found.append((number, match.start(1) + 1, match.group(1)))
    return found


def _statement_ranges(text: str) -> list[tuple[int, int]]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    ranges = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt):
            continue
        end = node.end_lineno or node.lineno
        if isinstance(node, COMPOUND):
            body = getattr(node, "body", None) or []
            first = body[0].lineno if body else end + 1
            decorators = getattr(node, "decorator_list", [])
            start = min([node.lineno] + [d.lineno for d in decorators])
            end = max(node.lineno, first - 1)
            ranges.append((start, end))
        else:
            ranges.append((node.lineno, end))
    return ranges


# ----- applying ---------------------------------------------------------------------------


class CheckedFiles(Protocol):
    """What suppressions need of the run (``mblint.engine.Engine`` provides it)."""

    display_root: Path
    directive_free: set[str]  # display paths whose text never mentions "mblint"
    rule_run: Any  # mblint.rule_run.RuleRun

    def project_display(self, path: Path) -> str: ...

    def settings_for(self, path: Path) -> Any: ...

    def settings_for_display(self, display: str) -> Any: ...


def apply_suppressions(engine: CheckedFiles, report: Report, checked: Iterable[Path]) -> None:
    """Drop suppressed findings from ``report`` (counting them in ``report.suppressed``) and
    add SY003/SY004 findings for the checked files."""
    root = engine.display_root
    aliases = {}
    for rule in engine.rule_run.all_rules:
        aliases[rule.id] = rule.id
        aliases[rule.name] = rule.id
    cache: dict[str, FileDirectives] = {}
    checked_displays = {engine.project_display(p): p for p in checked}
    no_directives = FileDirectives()  # of every file whose text never mentions "mblint"

    def directives_for(display: str) -> FileDirectives:
        if display in engine.directive_free:
            return no_directives
        if display not in cache:
            path = checked_displays.get(display) or (root / display)
            cache[display] = parse_directives(Path(path), aliases)
        return cache[display]

    kept: list[Finding] = []
    for finding in report.findings:
        settings = engine.settings_for_display(finding.location.path)
        if (settings is not None and settings.per_file_ignores
                and _selected(finding.rule_id, finding.rule_name, settings.ignored_for(root / finding.location.path))):
            finding.suppressed = True
            report.suppressed += 1
            continue
        if finding.location.path and finding.rule_id != "SY001":
            file = directives_for(finding.location.path)
            if file.directives and _suppress_inline(finding, file, aliases):
                finding.suppressed = True
                report.suppressed += 1
                continue
        kept.append(finding)

    for display, path in checked_displays.items():
        file = directives_for(display)
        if not file.invalid and not file.directives:
            continue  # nothing to report about suppressions in this file
        enabled = {rule.id: rule for rule in engine.rule_run.for_settings(engine.settings_for(path))}
        new: list[Finding] = []
        if INVALID_SUPPRESSION in enabled:
            for line, column, end, message in file.invalid:
                new.append(_finding(enabled[INVALID_SUPPRESSION], message, display, line, column, end))
        if UNUSED_SUPPRESSION in enabled:
            for directive in file.directives:
                unused = [c for c in directive.codes if c not in directive.used and aliases.get(c, c) in enabled]
                if unused:
                    what = "ignore-file" if directive.file_level else "ignore"
                    message = (f"unused suppression: {', '.join(unused)} reported nothing "
                               f"{'in this file' if directive.file_level else 'here'}; remove "
                               f"{'it' if len(unused) == len(directive.codes) else 'the unused ids'} "
                               f"from '# mblint: {what}[...]'")
                    new.append(_finding(enabled[UNUSED_SUPPRESSION], message, display, directive.line,
                                        directive.column, directive.end_column))
        settings = engine.settings_for(path)
        for finding in new:
            if settings is not None and _selected(finding.rule_id, finding.rule_name, settings.ignored_for(path)):
                report.suppressed += 1
            elif any(d.file_level and d.covers(finding, aliases) for d in file.directives):
                report.suppressed += 1
            else:
                kept.append(finding)
    report.findings = kept


def _suppress_inline(finding: Finding, file: FileDirectives, aliases: dict[str, str]) -> bool:
    loc = finding.location
    lines = set(range(loc.line, max(loc.end_line, loc.line) + 1))
    if file.ranges:
        start, end = file.statement_range(loc.line)
        lines.update(range(start, end + 1))
    hit = False
    for directive in file.directives:
        if not directive.file_level and directive.line not in lines:
            continue
        code = directive.covers(finding, aliases)
        if code is not None:
            directive.used.add(code)
            hit = True
    return hit


def _selected(rule_id: str, rule_name: str, selectors: tuple[str, ...]) -> bool:
    return any(s == "ALL" or rule_id.startswith(s) or rule_name == s for s in selectors)


def _finding(rule: type[Rule], message: str, display: str, line: int, column: int, end: int) -> Finding:
    origin = Origin(display, line, column, line, max(end, column + 1))
    return Finding(rule.id, rule.name, rule.severity, message, origin)
