"""The base class of a rule. One rule, one file: the class holds its id, kebab-case name,
default severity, documentation (fixed sections) and its own valid and invalid examples."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any, Callable, ClassVar, Iterable, Sequence

from mblint.findings import Finding, FixIntent, Related, Severity
from mblint.model import ABSENT, NOT_PLAIN_TYPES, EffectiveConfig, Origin, Unknown, is_known, is_node
from mblint.rule_docs import RuleDocumentation
from mblint.world_size import NAME as NAMED_GPU_COUNT

DOC_SECTIONS = ("What it does", "Why it matters", "Example", "Fix", "Versions", "Sources")
_ID = re.compile(r"^[A-Z]{2,4}\d{3}$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")


class Rule:
    """Subclasses set the class attributes and implement ``check``. ``doc`` is Markdown with
    the sections of ``DOC_SECTIONS`` as ``## `` headings. Examples are recipe function bodies
    (see ``mblint.testing``); a line of an invalid example marked ``# error`` (or
    ``# finding``) is where the finding must land."""

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    severity: ClassVar[Severity] = Severity.WARNING
    other_severities: ClassVar[tuple[Severity, ...]] = ()
    """Severities some of its findings have instead of ``severity`` (the documentation says when)."""
    summary: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    versions: ClassVar[tuple[str, ...]] = ()
    """Deprecated (plugins written for the two schema lines): Megatron-Bridge version prefixes
    ("0.6") the rule is for; empty: every version. Rules of this package say ``requires``."""
    requires: ClassVar[tuple[str, ...]] = ()
    """What the release being linted must have for the rule to apply, read from its schema:
    "field:NAME" (a config class has the field), "class:NAME", "check:NAME" (the code runs
    the check, mblint.schema.facts.SOURCE_CHECKS)."""
    tags: ClassVar[tuple[str, ...]] = ()
    supersedes: ClassVar[tuple[str, ...]] = ()
    """Ids of the rules whose finding this rule's finding replaces when both name the same
    ``problem`` on one job: this rule says it more precisely (mblint/arbitration.py)."""
    fixable: ClassVar[bool] = False
    help_uri: ClassVar[str | None] = RuleDocumentation()
    """The absolute URL of the rule's documentation page (SARIF ``helpUri``). A rule pack sets it;
    mblint's own rules link to docs/rules/<ID>.md in mblint's repository."""
    valid: ClassVar[Sequence[Any]] = ()
    invalid: ClassVar[Sequence[Any]] = ()
    checks_configurations: ClassVar[bool] = True
    """False for a rule whose findings a reader reports while reading a file (a syntax error, a
    launch line the runner rejects, an unused suppression): it has no ``check`` to run."""
    precondition: ClassVar[Callable[[EffectiveConfig], bool] | None] = None
    """A shared test of the configuration, one of the ``@precondition`` functions of
    mblint/rulekit.py, that is False only where ``check`` certainly reports nothing (it returns
    at once then, also when the value is unknown). The engine skips the rule where it is False;
    it is computed once per configuration for every rule that declares it."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        test = cls.__dict__.get("precondition")
        if test is not None and not isinstance(test, staticmethod):
            cls.precondition = staticmethod(test)  # a plain test of cfg, not a method of the rule

    def check(self, cfg: EffectiveConfig, ctx: "RuleContext") -> Iterable[Finding]:
        raise NotImplementedError

    @classmethod
    def severity_label(cls) -> str:
        """``error``, or ``error/warning`` for a rule that also reports other severities."""
        return "/".join(severity.label for severity in (cls.severity, *cls.other_severities))

    @classmethod
    def applies_to(cls, schema) -> bool:
        """Whether the rule checks configurations of the release ``schema`` describes."""
        if cls.versions and not any(version_matches(schema.megatron_bridge_version, v) for v in cls.versions):
            return False
        return all(schema_has(schema, need) for need in cls.requires)

    @classmethod
    def problems(cls) -> list[str]:
        """Why this rule class is malformed (empty when it is fine)."""
        found = []
        if not _ID.match(cls.id or ""):
            found.append(f"id {cls.id!r} is not like 'PK001'")
        if not _NAME.match(cls.name or ""):
            found.append(f"name {cls.name!r} is not kebab-case")
        if not cls.summary:
            found.append("no summary")
        for section in DOC_SECTIONS:
            if f"## {section}" not in (cls.doc or ""):
                found.append(f"documentation lacks the section '## {section}'")
        for other in cls.supersedes:
            if not _ID.match(other) or other == cls.id:
                found.append(f"supersedes {other!r}, which is not another rule's id")
        if cls.precondition is not None and not getattr(cls.precondition, "is_precondition", False):
            found.append(f"precondition {cls.precondition!r} is not a @precondition function")
        return found


class RuleContext:
    """What a rule may know besides the configuration: world size and the settings."""

    def __init__(self, rule: Rule, world_size: int | None = None, world_size_source: str = "",
                 settings: dict | None = None, editable_paths: frozenset[str] | None = None,
                 world_size_unknown_at: Origin | None = None) -> None:
        self.rule = rule
        self._world_size = world_size
        self.world_size_source = world_size_source
        # where the job leaves its world size unknown (a launcher option whose value is unknown)
        self.world_size_unknown_at = world_size_unknown_at
        self.settings = settings or {}
        self.editable_paths = editable_paths
        self.read_world_size = False  # whether the rule asked for the world size since the engine last cleared it
        self.planned_rules: tuple = ()  # the rule classes that check the same configurations (RulePlan)

    @property
    def world_size(self) -> int | None:
        self.read_world_size = True
        return self._world_size

    @world_size.setter
    def world_size(self, value: int | None) -> None:
        self._world_size = value

    @property
    def world_size_from_name(self) -> bool:
        return self.world_size_source == "name"

    def report(
        self,
        cfg: EffectiveConfig,
        message: str,
        fields: Sequence[str] = (),
        *,
        primary: str | None = None,
        severity: Severity | None = None,
        fixes: Sequence[FixIntent] = (),
        related_messages: dict[str, str] | None = None,
        location: Origin | None = None,
        problem: str = "",
    ) -> Finding:
        """A finding on ``cfg``. The primary location is ``location`` when given, else
        ``primary``'s last origin, else the line the first fix edits (its field's last origin,
        when the recipe itself or a linted override file wrote it), else the field among
        ``fields`` set last in program order, else the recipe function. The last origins of
        ``fields`` elsewhere are related, and so is the assignment of a local variable a shown
        place took its value from (``Origin.through``). ``problem`` names the fault when
        another rule may report it too (one of the names in mblint/rulekit.py): of two findings
        of one problem on a job, the engine keeps the more specific rule's (``Rule.supersedes``)."""
        lasts = [cfg.last_origin(path) for path in fields]
        target = _fix_target(fixes)
        if location is None:
            location = _primary_origin(cfg, lasts, primary, self.editable_paths, target, fields)
            if self.read_world_size and self.world_size_from_name:
                location = _named_world_choice(cfg, location, self._world_size)
        located = next((path for path in (primary, target, *fields)
                        if path is not None and cfg.last_origin(path) == location), None)
        related = _local_assignment(cfg, located, location)
        for path, origin in zip(fields, lasts):
            if origin is None or origin is location or origin == location:
                continue
            text = (related_messages or {}).get(path) or f"{path} = {format_value(cfg.value(path))} is set here"
            related.append(Related(origin, text))
            related += _local_assignment(cfg, path, origin)
        return Finding(
            rule_id=self.rule.id,
            rule_name=self.rule.name,
            severity=severity if severity is not None else self.rule.severity,
            message=message,
            location=location,
            related=tuple(_unique_related(related)),
            fields=tuple(fields),
            recipe=cfg.recipe.label,
            fixes=tuple(_keeping_intent(cfg, fix, self.editable_paths) for fix in fixes),
            problem=problem,
        )


def _fix_target(fixes: Sequence[FixIntent]) -> str | None:
    """The field the finding's first fix changes (an alternative is no fix)."""
    for fix in fixes:
        if not fix.alternative:
            return fix.field
    return None


def _primary_origin(cfg: EffectiveConfig, lasts: list[Origin | None], primary: str | None,
                    editable: frozenset[str] | None, target: str | None = None,
                    fields: Sequence[str] = ()) -> Origin:
    """Where the edit belongs: never a file mblint must not edit (an installed base builder),
    and never a default the recipe did not write. ``lasts`` holds each field's last origin.
    Unless the rule names the field at fault (``primary``), a place outside the recipe function
    gives way to the recipe's own choice (``_own_choice``)."""
    origin = _first_choice(cfg, lasts, primary, editable, target)
    if origin.kind == "recipe":
        return _object_origin(cfg, fields, editable) or origin
    return origin if primary is not None else _own_choice(cfg, origin, lasts)


def _own_choice(cfg: EffectiveConfig, origin: Origin, lasts: list[Origin | None]) -> Origin:
    """A place in another function (a helper, a base recipe) is where the problem shows, not
    always where it was chosen: the recipe's own line among the fields' last places, set last,
    when there is one."""
    if origin.kind == "override" or cfg.recipe.contains(origin):
        return origin
    own = [last for last in lasts if last is not None and last.kind not in ("default", "unknown")
           and cfg.recipe.contains(last)]
    return max(own, key=lambda o: o.seq) if own else origin


def _named_world_choice(cfg: EffectiveConfig, origin: Origin, world_size: int | None) -> Origin:
    """A finding that needs the world size of the recipe's name, at a place inside a base recipe
    named for another GPU count (``..._256gpu_...`` built on ``..._64gpu_...()``): the base is
    fine on its own world, so the recipe's own choice is its call to it (where it takes the
    base's values for a world they do not fit). A base named for the same count, or not for
    one (a helper), has the problem too: the place stays there, one finding for all."""
    if cfg.recipe.contains(origin) or not origin.via:
        return origin
    call = origin.via[0].origin()
    if not cfg.recipe.contains(call):
        return origin
    callee = origin.via[-1].node.func
    name = getattr(callee, "id", None) or getattr(callee, "attr", "")
    match = NAMED_GPU_COUNT.search(f"_{name}_")
    if match is None or int(match.group(1)) == world_size:
        return origin
    return replace(call, kind=origin.kind, seq=origin.seq)


def _object_origin(cfg: EffectiveConfig, fields: Sequence[str], editable: frozenset[str] | None) -> Origin | None:
    """For fields whose places are all out of reach (a model's config.json, a provider class's
    defaults): the recipe line that set the object holding them (``cfg.model = AutoBridge...``)."""
    for path in fields:
        parent = path.rpartition(".")[0]
        while parent:
            origins = cfg.origins(parent)
            last = origins[-1] if origins else None
            if last is not None and cfg.recipe.contains(last) and (editable is None or last.path in editable):
                return last
            parent = parent.rpartition(".")[0]
    return None


def _first_choice(cfg: EffectiveConfig, lasts: list[Origin | None], primary: str | None,
                  editable: frozenset[str] | None, target: str | None = None) -> Origin:

    def editable_place(origin: Origin | None) -> Origin | None:
        """The origin itself when mblint may edit its file, else the innermost call in an
        editable file through which the recipe reached it (``_benchmark_common(cfg)``)."""
        if origin is None or editable is None or origin.path in editable:
            return origin
        if not origin.via or not cfg.recipe.contains(origin.via[0].origin()):
            return None  # reached through another recipe's call (a reused result)
        for site in reversed(origin.via):
            place = site.origin()
            if place.path in editable:
                return replace(place, kind=origin.kind, seq=origin.seq)
        return None

    def usable(origin: Origin | None, kinds: tuple) -> Origin | None:
        if origin is None or origin.kind in kinds:
            return None
        return editable_place(origin)

    def written_for_this_recipe(origin: Origin | None) -> bool:
        """Set in a linted file by the recipe function itself or by an override; not by a helper
        or another recipe it builds on, where a change would reach other recipes too."""
        if origin is None or origin.kind in ("default", "unknown"):
            return False
        if editable is not None and origin.path not in editable:
            return False
        return origin.kind == "override" or cfg.recipe.contains(origin)

    # First what the user wrote: the field the rule names, else the field its fix changes
    # when this recipe wrote it (the line the fix edits), else the field set last; failing
    # that, the constructor call in an editable file whose dataclass default is at fault
    # (where the missing keyword belongs).
    for excluded in (("default", "unknown"), ("unknown",)):
        if primary is not None:
            origin = usable(cfg.last_origin(primary), excluded)
            if origin is not None:
                return origin
        if target is not None and "default" in excluded and written_for_this_recipe(cfg.last_origin(target)):
            return cfg.last_origin(target)
        pool = [o for o in (usable(last, excluded) for last in lasts) if o is not None]
        if pool:
            return max(pool, key=lambda o: o.seq)
    return cfg.recipe.origin()


def _local_assignment(cfg: EffectiveConfig, path: str | None, origin: Origin) -> list[Related]:
    """Where the local variable got its value when ``path`` was set from one at ``origin``
    (``seq_length = 8000`` for ``packed_sequence_size = seq_length``)."""
    if path is None or origin.through is None:
        return []
    return [Related(origin.through, f"the value {format_value(cfg.value(path))} comes from this assignment")]


def _keeping_intent(cfg: EffectiveConfig, fix: FixIntent, editable: frozenset[str] | None) -> FixIntent:
    """A safe fix keeps behaviour and evident intent: one that would replace a value written in
    a linted file or an override with a different value is unsafe, whatever the rule proposed.
    (A value an installed base builder set is no intent of the linted files' author.)"""
    if not fix.safe or fix.action != "set":
        return fix
    origin = cfg.last_origin(fix.field)
    if origin is None or origin.kind not in ("set", "override"):
        return fix
    if origin.kind == "set" and editable is not None and origin.path not in editable:
        return fix
    written = cfg.value(fix.field)
    if not is_known(written) or is_node(written) or (written == fix.value and type(written) is type(fix.value)):
        return fix
    return replace(fix, safe=False)


def _unique_related(related: list[Related]) -> list[Related]:
    seen = set()
    result = []
    for item in related:
        key = (item.origin.path, item.origin.line, item.origin.column, item.message)
        if key not in seen:
            seen.add(key)
            result.append(item)
    return result


def format_value(value: Any) -> str:
    if isinstance(value, Unknown):
        return "unknown"
    if value is ABSENT:
        return "not set"
    if is_node(value):
        return repr(value)
    if isinstance(value, str):
        return repr(value)
    return repr(value)


def known(*values: Any) -> bool:
    """True when every value given is a plain value a rule can compute with: not ``UNKNOWN``
    (mblint could not tell it), not ``ABSENT`` (the field does not exist there) and not a config
    object. The one test of known-ness rules use (``mblint.model.is_known`` only excludes
    ``UNKNOWN``: the resolver's question); a rule whose inputs are not known says nothing."""
    for value in values:
        if type(value) in NOT_PLAIN_TYPES:
            return False
    return True


def version_matches(version: str, prefix: str) -> bool:
    return version == prefix or version.startswith(prefix + ".")


def schema_has(schema, need: str) -> bool:
    """``need`` ("field:NAME", "class:NAME", "check:NAME") of Rule.requires, asked of a schema."""
    kind, _, name = need.partition(":")
    if kind == "field":
        return name in schema_field_names(schema)
    if kind == "class":
        return schema.find_class(name) is not None
    if kind == "check":
        return schema.has_check(name)
    raise ValueError(f"unknown requirement {need!r} (field:, class: or check:)")


_FIELD_NAMES: dict[str, frozenset[str]] = {}


def schema_field_names(schema) -> frozenset[str]:
    found = _FIELD_NAMES.get(schema.key)
    if found is None:
        found = _FIELD_NAMES[schema.key] = frozenset(schema.field_names())
    return found
