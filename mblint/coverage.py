"""The coverage record of a job: every place where mblint's analysis of a configuration stopped.

The interpreter records a ``Gap`` where it stops (a call that received a configuration object
and that it cannot follow, a model whose config.json is not at hand); the resolver keeps them
on the configuration (``EffectiveConfig.gaps``), and the coverage rules of the rule pack
(tag ``coverage``) report them. A run says "All checks passed" only when no job has a gap.
"""

from __future__ import annotations

import ast
from typing import Any, NamedTuple

from mblint.model import Origin
from mblint.unanalysed import builds_config

UNFOLLOWED_CALL = "unfollowed-call"
UNFOLLOWED_STATEMENT = "unfollowed-statement"
MODEL_CONFIG_MISSING = "model-config-missing"
MODEL_CONFIG_INCOMPLETE = "model-config-incomplete"  # read, but keys it leaves out have no known default
WORLD_SIZE_UNKNOWN = "the world size is unknown where the parallel layout is known"  # a problem (arbitration)
COVERAGE_TAG = "coverage"
MAX_PARTS_NAMED = 4  # in a gap's message; the others are counted


class Gap(NamedTuple):
    """``origin``: where analysis stopped (its ``via``: the calls that led there). ``subject``:
    what could not be followed (the call, the model); ``part``: what of the configuration it
    received; ``source``: where it comes from (its import)."""

    origin: Origin | None
    kind: str
    subject: str
    part: str = ""
    source: str = ""


def unfollowed_call(node: ast.Call, handed: list[int], imported: str) -> Gap:
    """A gap at ``node``, a call mblint cannot follow that received configuration objects:
    ``handed`` are the positions of those arguments among ``node``'s (-1: the object whose
    method it is), ``imported`` says where the callee came from ("" when not imported)."""
    arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
    texts = [_short(node.func.value if index < 0 and isinstance(node.func, ast.Attribute) else arguments[index])
             for index in handed if index < len(arguments)]
    return Gap(None, UNFOLLOWED_CALL, f"{_short(node.func)}()", ", ".join(dict.fromkeys(texts)), imported)


def unfollowed_statement(node: ast.AST, parts: list[ast.expr], why: str) -> Gap:
    """A gap at ``node``, a statement (or expression) mblint does not follow and that may
    change the configuration objects ``parts`` (the expressions that hold them); ``why``: what
    mblint does not follow in it."""
    texts = list(dict.fromkeys(_short(part) for part in parts))
    named = ", ".join(texts[:MAX_PARTS_NAMED]) + (f" and {len(texts) - MAX_PARTS_NAMED} more"
                                                  if len(texts) > MAX_PARTS_NAMED else "")
    return Gap(None, UNFOLLOWED_STATEMENT, _short(node), named, why)


def import_of(name: str, tree: ast.Module) -> str:
    """How ``name`` is imported in ``tree``: "imported on line N from M", or "" (asked only
    where a gap is recorded)."""
    for statement in ast.walk(tree):
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                if (alias.asname or alias.name) == name:
                    return f"imported on line {statement.lineno} from {'.' * statement.level}{statement.module or ''}"
        elif isinstance(statement, ast.Import):
            for alias in statement.names:
                if (alias.asname or alias.name.split(".")[0]) == name:
                    return f"imported on line {statement.lineno} as {alias.name}"
    return ""


def root_name(node: ast.expr) -> str | None:
    """The name a dotted callee starts from (``tweaks`` for ``tweaks.apply(cfg)``)."""
    while isinstance(node, ast.Attribute):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _short(node: ast.AST) -> str:
    text = ast.unparse(node).split("\n", 1)[0].rstrip(":")  # a compound statement: its first line
    return text if len(text) <= 60 else text[:57] + "..."


def reached_from(cfg: Any, origin: Origin, editable: frozenset[str] | None) -> Origin | None:
    """The innermost call in a linted file through which the recipe reached ``origin``, a place
    in a file that is not linted (an installed Megatron-Bridge); None when there is none (or
    ``origin`` is in a linted file)."""
    if editable is None or origin.path in editable:
        return None
    if origin.via and cfg.recipe.contains(origin.via[0].origin()):
        for site in reversed(origin.via):
            where = site.origin()
            if where.path in editable:
                return where
    return None


ENVIRONMENT_UNKNOWN = "CV006"  # the rule that reports the launch environment variables rules needed and did not know


def environment_gaps(readers: dict) -> list[tuple[Origin, str]]:
    """(where, message) of each place that left launch environment variables unknown that the
    rules read: ``readers`` maps (name, where, opened) to the ids of the rules that read it
    (``RuleRun.run``'s ``unknown_environment``); ``opened``: the variable is not set in the
    script after that place (a ``source``, an ``eval``...), else the script sets it there to a
    value mblint cannot know."""
    places: dict[tuple[Origin, bool], dict[str, list[str]]] = {}
    for (name, where, opened), rule_ids in readers.items():
        named = places.setdefault((where, opened), {})
        named[name] = sorted(set(named.get(name, [])) | set(rule_ids))
    return [(where, _environment_message(named, opened)) for (where, opened), named in places.items()]


def _environment_message(named: dict[str, list[str]], opened: bool) -> str:
    variables = ", ".join(f"{name} ({', '.join(rule_ids)})" for name, rule_ids in
                          list(named.items())[:MAX_PARTS_NAMED])
    if len(named) > MAX_PARTS_NAMED:
        variables += f" and {len(named) - MAX_PARTS_NAMED} more"
    them = "them" if len(named) > 1 else "it"
    if opened:
        return (f"{variables} not checked: the job's environment is unknown from here on (what this line runs may "
                f"set or drop any variable, and a value in the environment wins over cfg.env_vars); "
                f"set {them} after this line to have {them} checked")
    return (f"{variables} not checked: the launch gives {them} a value mblint cannot know here; "
            f"set {them} to a literal value to have {them} checked")


def coverage_rule_ids(rules) -> frozenset[str]:
    """The ids of the rules among ``rules`` (classes) that report gaps."""
    key = tuple(rules)
    found = _COVERAGE_IDS.get(key)
    if found is None:
        found = _COVERAGE_IDS[key] = frozenset(rule.id for rule in rules if COVERAGE_TAG in (rule.tags or ()))
    return found


_COVERAGE_IDS: dict[tuple, frozenset[str]] = {}


def record_gaps(job: str, findings, rules, unchecked: list) -> None:
    """[job, rule id] in ``unchecked`` for each coverage finding among ``findings`` (the
    findings of one job): the report counts the jobs not fully checked from them, before
    findings at one place are reported once for all jobs."""
    ids = coverage_rule_ids(rules)
    for rule_id in dict.fromkeys(finding.rule_id for finding in findings if finding.rule_id in ids):
        unchecked.append([job, rule_id])


def jobs_not_fully_checked(report) -> tuple[int, dict[str, int]]:
    """How many jobs of ``report`` have a gap whose finding is reported (not suppressed nor
    ignored), and per coverage rule id how many jobs it stopped, most first."""
    reported = {finding.rule_id for finding in report.findings if not finding.suppressed}
    jobs: dict[str, set] = {}
    for job, rule_id in getattr(report, "unchecked", ()):
        if rule_id in reported:
            jobs.setdefault(rule_id, set()).add(job)
    count = len(set().union(*jobs.values())) if jobs else 0
    return count, dict(sorted(((rule_id, len(held)) for rule_id, held in jobs.items()), key=lambda item: (-item[1], item[0])))


def unreadable_imports(interp, path) -> list:
    """The SourceError of each module that ``path``'s module reached through its imports
    (transitively) and that could not be read or parsed: its names are unknown to every recipe
    that uses them."""
    if not interp.unreadable_modules:
        return []
    reached = interp.dependencies(interp.finder.real_paths.of(path))
    return [error for module, error in interp.unreadable_modules.items() if module in reached]


def unnamed_builders(tree: ast.Module, recipes: list[ast.FunctionDef]) -> list[ast.FunctionDef]:
    """Public functions of the module, callable without arguments, that are not named like a
    recipe but build a configuration from one (``def build(): cfg = x_config(); ...; return
    cfg``): analysed as recipes when what they return is a ConfigContainer."""
    named = {node.name for node in recipes}
    found = []
    for node in tree.body:
        if (isinstance(node, ast.FunctionDef) and not node.name.startswith("_") and node.name not in named
                and callable_without_arguments(node.args) and _returns_a_value(node) and builds_config(node)):
            found.append(node)
    return found


def callable_without_arguments(spec: ast.arguments) -> bool:
    required = len(spec.posonlyargs) + len(spec.args) - len(spec.defaults)
    return required <= 0 and all(default is not None for default in spec.kw_defaults)


def _returns_a_value(function: ast.FunctionDef) -> bool:
    return any(isinstance(node, ast.Return) and node.value is not None for node in ast.walk(function))
