"""Reporters only format; they decide nothing.

``printable`` is the one neutraliser of text mblint did not write (messages quoting a linted
file, file names, keys, values): every output meant for a terminal or a CI log passes such
text through it, so a linted file cannot drive the terminal (escape sequences, bell, title
changes, screen clears) nor forge extra lines (a newline or a Unicode line break in a key)."""

from __future__ import annotations

import re

# C0 and C1 controls (but the tab), DEL, Unicode line and paragraph separators and the bidi
# overrides and isolates.
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_ASCII_CONTROLS = tuple(chr(code) for code in [*range(0x20), 0x7F])


def all_printable(text: str) -> bool:
    """``text.isprintable()``; an ASCII text (a report, most often) is searched for each of its
    control characters (a memchr each) instead of looking every character up."""
    if text.isascii():
        return not any(control in text for control in _ASCII_CONTROLS)
    return text.isprintable()


def printable(text: str) -> str:
    """``text`` with every control character shown as ``\\xNN`` or ``\\uNNNN``."""
    if text.isprintable():  # every character _CONTROL matches is one isprintable() rejects
        return text
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}",
                        text)
