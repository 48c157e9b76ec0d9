"""Code actions: a finding's fix as a quick fix (its unsafe ones labelled so), "ignore RULE on
this line" writing mblint's suppression comment, and "fix all" (the safe fixes, as ``--fix``).

A fix is computed by the fix loop of ``mblint check --fix`` (``mblint.fix.run_fixes``) on the
document's text, restricted to the one finding: it is planned, applied in memory and proved
(the file still parses, the finding is gone, nothing new or worse appears) exactly as on the
command line, and the edited text comes back as text edits."""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Callable

from lsprotocol import types

from mblint.findings import Finding
from mblint.fix import run_fixes
from mblint.fix.files import state_from_bytes
from mblint.report import printable

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.mblint"
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_IGNORE = re.compile(r"(#\s*mblint\s*:\s*ignore\[)([^\]]*)(\])")


def fix_title(finding: Finding) -> str:
    intents = finding.applicable_fixes
    what = "; ".join(intent.description or f"{intent.action} {intent.field}" for intent in intents)
    safe = all(intent.safe for intent in intents)
    return printable(f"Fix {finding.rule_id}: {what}" + ("" if safe else " (unsafe fix)"))  # names from the file


class FixOutcome:
    """The edited text of a fix, or why there is none."""

    def __init__(self, text: str | None, reason: str = "") -> None:
        self.text = text
        self.reason = reason


def compute_fix(make_engine: Callable, path: Path, text: str, identity: tuple | None, unsafe: bool) -> FixOutcome:
    """The document's text with the fix of the finding ``identity`` applied (every safe fix,
    or every fix with ``unsafe``, when ``identity`` is None), as ``--fix`` would prove it."""
    state = state_from_bytes(path, text.encode("utf-8", "surrogatepass"))
    if state is None:
        return FixOutcome(None, "the document is not UTF-8 text")
    only = None if identity is None else (lambda finding: finding.identity() == identity)
    run = run_fixes(make_engine, [str(path)], unsafe=unsafe, initial=state, only=only)
    fixed = run.texts.get(path)
    if fixed is None or fixed == state.text:
        reasons = [record.reason for record in (*run.dropped, *run.unfixable) if record.reason]
        return FixOutcome(None, reasons[0] if reasons else "no fix applies to this text any more")
    new = state.encode(fixed).decode("utf-8")
    return FixOutcome(new[1:] if state.bom and new.startswith("\ufeff") else new)


def text_edits(old: str, new: str) -> list[types.TextEdit]:
    """The edits that turn ``old`` into ``new``, whole lines each (a line's start is the same
    position in every encoding of characters)."""
    before, after = _LINE.findall(old), _LINE.findall(new)
    edits = []
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        start = types.Position(line=i1, character=0)
        end = types.Position(line=i2, character=0)
        if i2 == len(before) and before and not before[-1].endswith(("\n", "\r")):
            end = types.Position(line=i2 - 1, character=len(before[-1].encode("utf-16-le")) // 2)
        edits.append(types.TextEdit(range=types.Range(start=start, end=end), new_text="".join(after[j1:j2])))
    return edits


def ignore_edit(text: str, line: int, rule_id: str, codec) -> types.TextEdit | None:
    """Write ``# mblint: ignore[RULE]`` at the end of ``line`` (1-based), or add RULE to the
    ignore comment already there; None where a comment would change the code: after a line
    continuation backslash."""
    lines = _LINE.findall(text)
    if not 1 <= line <= len(lines):
        return None
    raw = lines[line - 1]
    body = raw.rstrip("\r\n")
    if body.rstrip().endswith("\\"):
        return None
    existing = _IGNORE.search(body)
    if existing is not None:
        codes = [code.strip() for code in existing.group(2).split(",") if code.strip()]
        if rule_id in codes:
            return None
        start, end = existing.span(2)
        replacement = ", ".join([*codes, rule_id])
    else:
        stripped = body.rstrip()
        start, end = len(stripped), len(body)
        replacement = f"  # mblint: ignore[{rule_id}]"
    lines_for_codec = [raw]
    first = codec.position_to_client_units(lines_for_codec, types.Position(line=0, character=start))
    last = codec.position_to_client_units(lines_for_codec, types.Position(line=0, character=end))
    return types.TextEdit(range=types.Range(start=types.Position(line=line - 1, character=first.character),
                                            end=types.Position(line=line - 1, character=last.character)),
                          new_text=replacement)
