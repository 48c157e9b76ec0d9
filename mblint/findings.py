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
    A ``rename`` with a ``value`` also replaces the value. ``safe`` fixes keep the user's evident intent; unsafe ones change batch arithmetic, data
    layout or the packed dataset. An ``alternative`` is another way out that the user may
    choose instead of the fix: it is shown, never applied."""

    action: str
    field: str
    value: Any = None
    new_field: str | None = None
    safe: bool = True
    description: str = ""
    alternative: bool = False


@dataclass(frozen=True)
class Related:
    """Another place that takes part in a finding, and what it does there."""

    origin: Origin
    message: str


@dataclass
class Finding:
    """What a rule reports: where (``location``), about which fields, with the fixes it proposes."""

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
    problem: str = ""
    """The fault the finding reports when another rule may report it too (mblint/arbitration.py);
    not part of the output."""
    recipes: tuple[str, ...] = ()
    """Every recipe the finding stands for when it stands for more than its own ``recipe``
    (recipes sharing the line reported the problem once); empty otherwise."""

    @property
    def applicable_fixes(self) -> tuple[FixIntent, ...]:
        """The intents applied together by ``--fix``: every one but the alternatives."""
        return tuple(intent for intent in self.fixes if not intent.alternative)

    def sort_key(self) -> tuple:
        return (self.location.path, self.location.line, self.location.column, self.rule_id, self.message)

    def identity(self) -> tuple:
        """What makes two findings the same report (the report keeps the first)."""
        return (self.rule_id, self.location.path, self.location.line, self.location.column, self.message)


def origin_from_dict(data: dict) -> Origin:
    return Origin(data["path"], data["line"], data["column"], data["end_line"], data["end_column"],
                     data.get("kind", "set"), data.get("seq", 0))


def _related_from_dict(data: dict) -> Related:
    return Related(origin_from_dict(data["origin"]), data["message"])


def _fix_from_dict(data: dict) -> FixIntent:
    return FixIntent(data["action"], data["field"], data.get("value"), data.get("new_field"), data.get("safe", True),
                     data.get("description", ""), data.get("alternative", False))


def finding_to_dict(finding: Finding) -> dict:
    def origin(o: Origin) -> dict:
        return {**o.to_json(), "kind": o.kind, "seq": o.seq}

    return {
        "rule_id": finding.rule_id, "rule_name": finding.rule_name, "severity": int(finding.severity),
        "message": finding.message, "location": origin(finding.location),
        "related": [{"origin": origin(r.origin), "message": r.message} for r in finding.related],
        "fields": list(finding.fields), "recipe": finding.recipe,
        "fixes": [{"action": f.action, "field": f.field, "value": f.value, "new_field": f.new_field,
                   "safe": f.safe, "description": f.description, "alternative": f.alternative}
                  for f in finding.fixes],
        "extra": finding.extra, "problem": finding.problem, "recipes": list(finding.recipes),
    }


def identity_of(data: dict) -> tuple:
    """``Finding.identity`` of a finding still in its ``finding_to_dict`` form."""
    location = data["location"]
    return (data["rule_id"], location["path"], location["line"], location["column"], data["message"])


def finding_from_dict(data: dict) -> Finding:
    return Finding(
        data["rule_id"], data["rule_name"], _SEVERITIES[data["severity"]], data["message"],
        origin_from_dict(data["location"]), tuple(_related_from_dict(r) for r in data["related"]),
        tuple(data["fields"]), data["recipe"], tuple(_fix_from_dict(f) for f in data["fixes"]),
        False, data.get("extra", {}), data.get("problem", ""), tuple(data.get("recipes", ())),
    )


_SEVERITIES = {int(severity): severity for severity in Severity}


# Findings sent to another process of the same run go as pickles in which every finding part
# is rebuilt from a tuple of its values by one call (the unpickler's REDUCE), not from the dict
# that ``finding_to_dict`` makes (a Python call per finding, origin, related place and fix on
# both sides) nor from its ``__dict__`` (object.__reduce_ex__, and an interned key per field).
# An origin goes as its place, kind and sequence, without ``via`` (the calls that reached it
# hold whole syntax trees), as ``finding_to_dict`` keeps it.


def _origin_reduced(origin: Origin) -> tuple:
    return Origin, (origin.path, origin.line, origin.column, origin.end_line, origin.end_column, origin.kind,
                       origin.seq)


def _finding_reduced(finding: Finding) -> tuple:
    return Finding, (finding.rule_id, finding.rule_name, finding.severity, finding.message, finding.location,
                     tuple(finding.related), tuple(finding.fields), finding.recipe, tuple(finding.fixes), False,
                     finding.extra, finding.problem, finding.recipes)


def _related_reduced(related: Related) -> tuple:
    return Related, (related.origin, related.message)


def _fix_reduced(fix: FixIntent) -> tuple:
    return FixIntent, (fix.action, fix.field, fix.value, fix.new_field, fix.safe, fix.description, fix.alternative)


TRANSFER_REDUCERS = {Origin: _origin_reduced, Finding: _finding_reduced, Related: _related_reduced,
                     FixIntent: _fix_reduced}
