"""What rules report: findings with a primary location, related locations and fix intents."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from mblint.model import Origin


class Severity(IntEnum):
    INFO = 0
    WARNING = 1
    ERROR = 2

    @classmethod
    def parse(cls, text: str) -> "Severity":
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(f"unknown severity {text!r} (use error, warning or info)") from None

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class FixIntent:
    """What a rule proposes, not a text edit. ``action``: set | add | rename | remove.
    ``safe`` fixes keep the user's evident intent; unsafe ones change batch arithmetic, data
    layout or the packed dataset."""

    action: str
    field: str
    value: Any = None
    new_field: str | None = None
    safe: bool = True
    description: str = ""


@dataclass(frozen=True)
class Related:
    origin: Origin
    message: str


@dataclass
class Finding:
    rule_id: str
    rule_name: str
    severity: Severity
    message: str
    location: Origin
    related: tuple[Related, ...] = ()
    fields: tuple[str, ...] = ()
    recipe: str = ""
    fixes: tuple[FixIntent, ...] = ()
    suppressed: bool = False
    extra: dict = field(default_factory=dict)

    def sort_key(self) -> tuple:
        return (self.location.path, self.location.line, self.location.column, self.rule_id, self.message)

    def identity(self) -> tuple:
        return (self.rule_id, self.location.path, self.location.line, self.location.column, self.message)
