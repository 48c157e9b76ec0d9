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


# ----- the one encoding of a finding ----------------------------------------------------------
#
# A finding leaves the process that found it in two ways: into the result cache (JSON) and from
# a worker process to the parent (a pickle). Both carry ``encode(finding)``: each part as the
# tuple of its constructor's arguments, in the order ``PARTS`` gives (JSON makes the tuples
# lists); ``decode`` rebuilds it. An origin goes as its place, kind and sequence, without
# ``via`` (the calls that reached it hold whole syntax trees) or ``through``; a finding goes
# unsuppressed.

PARTS = {
    Origin: ("path", "line", "column", "end_line", "end_column", "kind", "seq"),
    Related: ("origin", "message"),
    FixIntent: ("action", "field", "value", "new_field", "safe", "description", "alternative"),
    Finding: ("rule_id", "rule_name", "severity", "message", "location", "related", "fields", "recipe", "fixes",
              "extra", "problem", "recipes"),
}
ENCODING = 3  # changes whenever PARTS does: it keys the cache


def _origin_parts(origin: Origin) -> tuple:
    return (origin.path, origin.line, origin.column, origin.end_line, origin.end_column, origin.kind, origin.seq)


def encode(finding: Finding) -> tuple:
    """``finding`` as plain values (see ``PARTS``), for the cache and for worker processes."""
    return (finding.rule_id, finding.rule_name, int(finding.severity), finding.message,
            _origin_parts(finding.location),
            tuple((_origin_parts(related.origin), related.message) for related in finding.related),
            tuple(finding.fields), finding.recipe,
            tuple((fix.action, fix.field, fix.value, fix.new_field, fix.safe, fix.description, fix.alternative)
                  for fix in finding.fixes),
            finding.extra, finding.problem, tuple(finding.recipes))


def decode(parts) -> Finding:
    """The finding ``encode`` gave ``parts`` for (tuples, or the lists JSON made of them)."""
    rule_id, rule_name, severity, message, location, related, fields, recipe, fixes, extra, problem, recipes = parts
    return Finding(rule_id, rule_name, _SEVERITIES[severity], message, Origin(*location),
                   tuple(Related(Origin(*origin), text) for origin, text in related), tuple(fields), recipe,
                   tuple(FixIntent(*fix) for fix in fixes), False, extra, problem, tuple(recipes))


def identity_of(parts) -> tuple:
    """``Finding.identity`` of a finding still encoded."""
    location = parts[4]
    return (parts[0], location[0], location[1], location[2], parts[3])


_SEVERITIES = {int(severity): severity for severity in Severity}
