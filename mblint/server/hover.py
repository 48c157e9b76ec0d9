"""Hover on a configuration field: the value it ends up with in each job that reaches the line
(a recipe function, an override file's job, a launch line's), and every place that set it, in
program order, as ``mblint show`` gives them (``EffectiveConfig.fields`` and their origins).

The jobs are those of the last check of the open documents: the document's own, and those of
other open documents that reach the line (an override file open beside its recipe, a recipe
beside the base builder it calls). The field is the one whose place the cursor is in: an
assignment ``cfg.a.b = ...``, a keyword of a config class, a YAML key, a ``KEY=VALUE`` of a
launch line; of places that nest (a constructor call and one of its keywords), the innermost."""

from __future__ import annotations

from dataclasses import dataclass

from mblint.report import printable

MAX_GROUPS = 8  # distinct (value, places) shown; the others are counted
MAX_NAMES = 4  # jobs named per group


@dataclass(frozen=True)
class Hit:
    field: str
    job: str  # the job's name
    value: str
    places: tuple[str, ...]


def job_name(job) -> str:
    """The recipe alone by its label; another job as the engine names it, with its recipe's
    function when that name leaves it out ("the job launched at run.sh:3 (llama3_8b_config)")."""
    recipe = job.cfg.recipe
    if not job.about:
        return recipe.label
    return job.about if recipe.function in job.about else f"{job.about} ({recipe.function})"


def hits_at(jobs, display: str, line: int, column: int) -> list[Hit]:
    """The fields whose places in ``display`` hold (line, column) (1-based, characters), in
    each job, keeping the innermost places only."""
    found: list[tuple[tuple, str, object, object]] = []  # (extent, field, resolved, job)
    for job in jobs:
        for name, resolved in job.cfg.fields.items():
            for origin in resolved.origins:
                if origin.path == display and _holds(origin, line, column):
                    found.append((_extent(origin), name, resolved, job))
                    break
    if not found:
        return []
    innermost = min(extent for extent, *_ in found)
    hits = []
    for extent, name, resolved, job in found:
        if extent == innermost:
            value = repr(resolved.value) if resolved.known else "<unknown>"
            places = tuple(f"{o.path}:{o.line}:{o.column} ({o.kind})" for o in resolved.origins)
            hits.append(Hit(name, job_name(job), value, places))
    return hits


def _holds(origin, line: int, column: int) -> bool:
    if not origin.line <= line <= origin.end_line:
        return False
    if line == origin.line and column < origin.column:
        return False
    return not (line == origin.end_line and column > origin.end_column)  # the end itself counts (cursor after)


def _extent(origin) -> tuple:
    return (origin.end_line - origin.line, origin.end_column - origin.column if origin.end_line == origin.line else 0)


def render(hits: list[Hit]) -> str:
    """Markdown: per field, the jobs grouped by the value and places they share."""
    blocks = []
    for field in dict.fromkeys(hit.field for hit in hits):
        groups: dict[tuple, list[str]] = {}
        for hit in hits:
            if hit.field == field:
                groups.setdefault((hit.value, hit.places), []).append(hit.job)
        jobs = sum(len(names) for names in groups.values())
        lines = [f"**{_code(field)}** in {jobs} job{'s' if jobs != 1 else ''}"]
        for (value, places), names in list(groups.items())[:MAX_GROUPS]:
            shown = ", ".join(_code(name) for name in dict.fromkeys(names[:MAX_NAMES]))
            more = f" and {len(names) - MAX_NAMES} more" if len(names) > MAX_NAMES else ""
            lines.append("")
            lines.append(f"{_code(value)} in {shown}{more}, set at, in order:")
            lines.extend(f"{index}. {_code(place)}" for index, place in enumerate(places, 1))
        if len(groups) > MAX_GROUPS:
            lines.append("")
            lines.append(f"... {len(groups) - MAX_GROUPS} more values or histories not shown")
        blocks.append("\n".join(lines))
    return "\n\n---\n\n".join(blocks)


def _code(text: str) -> str:
    """``text`` as inline code: printable, and fenced by more backticks than it holds."""
    text = printable(text)
    longest = 0
    run = 0
    for char in text:
        run = run + 1 if char == "`" else 0
        longest = max(longest, run)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
