"""What a run produced: per file (``FileResult``, ``FileError``) and merged (``Report``).
Reporters read a ``Report``; they decide nothing."""

from __future__ import annotations

from mblint.findings import Finding, decode, encode, identity_of


class FileError:
    """A file (or setting) that could not be checked, and why."""

    def __init__(self, path: str, message: str, line: int = 0, column: int = 0) -> None:
        self.path = path
        self.message = message
        self.line = line
        self.column = column

    def __str__(self) -> str:
        where = f":{self.line}:{self.column}" if self.line else ""
        return f"{self.path}{where}: {self.message}"


class FileResult:
    """What linting one file produced; cached as JSON (``to_dict``), sent from a worker process
    as a pickle (``dumps_for_transfer``).

    ``directive_free``: the file's text does not mention "mblint": no suppression comment can
    be in it, so a cached result spares reading the file again for suppressions."""

    def __init__(self, findings: list[Finding] | None = None, errors: list[FileError] | None = None,
                 notes: list[str] | None = None, recipes: int = 0, resolved: int = 0,
                 directive_free: bool = False, not_analysed: list | None = None,
                 schemas: list[dict] | None = None, unchecked: list | None = None) -> None:
        self.findings = [] if findings is None else findings
        self.schemas = [] if schemas is None else schemas  # the schemas its recipes were linted against
        self.errors = [] if errors is None else errors
        self.notes = [] if notes is None else notes
        self.recipes = recipes
        self.resolved = resolved
        self.directive_free = directive_free
        self.not_analysed = [] if not_analysed is None else not_analysed  # [display path, why]
        self.unchecked = [] if unchecked is None else unchecked  # [job, coverage rule id]: a gap of the job

    def to_dict(self) -> dict:
        return {"findings": [encode(f) for f in self.findings],
                "errors": [vars(e) for e in self.errors], "notes": self.notes,
                "recipes": self.recipes, "resolved": self.resolved, "directive_free": self.directive_free,
                "not_analysed": self.not_analysed, "schemas": self.schemas, "unchecked": self.unchecked}

    @classmethod
    def from_dict(cls, data: dict, seen: set | None = None) -> "FileResult":
        """``seen``: identities of the findings already reported; a finding whose identity is
        in it is left out (a duplicate the report drops anyway) and is never decoded."""
        findings = data["findings"] if seen is None else _unseen(data["findings"], seen)
        return cls([decode(f) for f in findings], [FileError(**e) for e in data["errors"]],
                   list(data["notes"]), data["recipes"], data["resolved"], data.get("directive_free", False),
                   [list(entry) for entry in data.get("not_analysed", [])], list(data.get("schemas", ())),
                   [[str(job), str(rule)] for job, rule in data.get("unchecked", [])])


class Report:
    """Everything a run found, merged over its files."""

    def __init__(self, findings: list[Finding] | None = None, errors: list[FileError] | None = None,
                 notes: list[str] | None = None, files: int = 0, recipes: int = 0, resolved: int = 0,
                 cache_hits: int = 0, suppressed: int = 0, baselined: int = 0, stale_baseline: list | None = None,
                 rules: list | None = None, checked: list[str] | None = None,
                 not_analysed: list | None = None) -> None:
        self.findings = [] if findings is None else findings
        self.errors = [] if errors is None else errors
        self.notes = [] if notes is None else notes
        self.files = files
        self.recipes = recipes
        self.resolved = resolved
        self.cache_hits = cache_hits
        self.suppressed = suppressed  # findings dropped by suppression comments and per-file-ignores
        self.baselined = baselined  # findings dropped because the baseline holds them
        self.stale_baseline = [] if stale_baseline is None else stale_baseline  # mblint.baseline.StaleEntry
        self.rules = [] if rules is None else rules  # every rule enabled for some checked file
        self.checked = [] if checked is None else checked  # display paths of the checked files
        self.not_analysed = [] if not_analysed is None else not_analysed  # [display path, why] of the files given
        self.confinement = None  # mblint.paths.Confinement: the files the text report may quote; None: any
        self.schemas: list[dict] = []  # each schema the files were linted against, once
        self.unchecked: list = []  # [job, coverage rule id] for each gap of a job (mblint.coverage)

    def add_schemas(self, schemas: list[dict]) -> None:
        for schema in schemas:
            if schema not in self.schemas:
                self.schemas.append(schema)

    def add(self, result: FileResult) -> None:
        self.findings.extend(result.findings)
        self.not_analysed.extend(result.not_analysed)
        self.unchecked.extend(result.unchecked)
        self.errors.extend(result.errors)
        self.notes.extend(result.notes)
        self.recipes += result.recipes
        self.resolved += result.resolved
        self.add_schemas(result.schemas)


def _unseen(findings: list[dict], seen: set) -> list[dict]:
    unseen = []
    for data in findings:
        key = identity_of(data)
        if key not in seen:
            seen.add(key)
            unseen.append(data)
    return unseen


def decoded_result(cached: dict) -> FileResult | None:
    """The result a cache entry holds, or None when the entry is damaged (a severity out of
    range, a wrong type, a missing key): a cache folder may come from an untrusted checkout.
    Every finding is decoded, repeats of another file's included: the report merges the
    recipes each stands for (mblint/arbitration.py)."""
    try:
        result = FileResult.from_dict(cached)
        if not all(isinstance(n, str) for n in result.notes) or not all(map(_well_formed, result.findings)):
            raise TypeError("not a result")
        return result
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, RecursionError):
        return None


def _well_formed(finding: Finding) -> bool:
    places = (finding.location, *(related.origin for related in finding.related))
    return (isinstance(finding.message, str) and isinstance(finding.recipe, str) and isinstance(finding.problem, str)
            and all(isinstance(recipe, str) for recipe in finding.recipes)
            and all(isinstance(place.path, str) and all(type(number) is int for number in
                    (place.line, place.column, place.end_line, place.end_column)) for place in places))
