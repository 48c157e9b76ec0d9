"""SARIF 2.1.0 for GitHub code scanning, built with sarif-om and serialised by a small
serializer over the attrs metadata (``schema_property_name``).

One run. ``tool.driver.rules`` lists the rules the results refer to (as ruff does; GitHub
needs no other), sorted by id, each with its full documentation: a SARIF file grows with what
it reports, not with the size of the rule pack. With no result the list is empty. URIs are relative to the repository root
(the nearest folder holding ``.git`` above the working directory, else the working directory)
under ``uriBaseId`` ``%SRCROOT%``. ``partialFingerprints["mblint/v1"]`` hashes rule id, path,
field paths and recipe function (never line numbers); ``primaryLocationLineHash`` is left to
upload-sarif. Suppressed and baselined findings were already removed by the engine.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

import attr
import sarif_om as om

from mblint import __version__
from mblint.baseline import recipe_function
from mblint.coverage import coverage_rule_ids
from mblint.findings import Finding, Severity
from mblint.model import Origin
from mblint.results import Report

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
PROBLEM_SEVERITY = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "recommendation"}
# attrs defaults that must still be written (GitHub reads them; the spec default is "warning")
ALWAYS_KEEP = {"level"}
KEEP_EMPTY = {"rules"}  # tool.driver.rules is required by GitHub, even when no rule fired


def render(report: Report, root: Path | None = None, display_root: Path | None = None) -> str:
    log = build_log(report, root, display_root)
    return json.dumps(to_dict(log), indent=2, sort_keys=True) + "\n"


def information_uri() -> str | None:
    """The project's home page from the package metadata (``[project.urls]``), if any."""
    from mblint.rule_docs import project_urls

    urls = project_urls()
    return next((urls[label] for label in ("homepage", "home", "documentation", "repository", "source")
                 if label in urls), None)


def repository_root(start: Path | None = None) -> Path:
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".git").exists():
            return folder
    return here


def build_log(report: Report, root: Path | None = None, display_root: Path | None = None) -> om.SarifLog:
    root = (root or repository_root()).resolve()
    display_root = (display_root or Path.cwd()).resolve()
    reported = [finding for finding in report.findings if not finding.suppressed]
    referred = {finding.rule_id for finding in reported}
    rules = sorted((rule for rule in report.rules if rule.id in referred), key=lambda r: r.id)
    index = {rule.id: i for i, rule in enumerate(rules)}
    seen: Counter = Counter()
    results = [_result(finding, index, root, display_root, seen) for finding in reported]
    driver = om.ToolComponent(
        name="mblint",
        version=__version__,
        semantic_version=__version__,
        information_uri=information_uri(),
        rules=[_descriptor(rule) for rule in rules],
    )
    run = om.Run(
        tool=om.Tool(driver=driver),
        results=results,
        original_uri_base_ids={SRCROOT: om.ArtifactLocation(uri=root.as_uri().rstrip("/") + "/")},
        column_kind="unicodeCodePoints",
        invocations=[om.Invocation(execution_successful=not report.errors,
                                   tool_execution_notifications=_gap_notifications(report, results) or None)],
        properties={"megatronBridgeSchemas": list(getattr(report, "schemas", ()))},
    )
    return om.SarifLog(version="2.1.0", schema_uri=SCHEMA_URI, runs=[run])


def _gap_notifications(report: Report, results: list[om.Result]) -> list[om.Notification]:
    """Each coverage finding again as a notification of the run: where the analysis stopped."""
    gap_rules = coverage_rule_ids(report.rules)
    return [om.Notification(message=result.message, level=result.level, locations=result.locations,
                            associated_rule=om.ReportingDescriptorReference(id=result.rule_id, index=result.rule_index))
            for result in results if result.rule_id in gap_rules]


def _descriptor(rule: Any) -> om.ReportingDescriptor:
    severity = rule.severity
    summary = (rule.summary or rule.name or rule.id).strip()
    doc = (rule.doc or "").strip()
    full = _first_section(doc) or summary
    tags = list(dict.fromkeys(list(getattr(rule, "tags", ()) or ()) + ["megatron-bridge"]))[:20]
    return om.ReportingDescriptor(
        id=rule.id,
        name=rule.name or None,
        short_description=om.MultiformatMessageString(text=_clip(summary)),
        full_description=om.MultiformatMessageString(text=_clip(full)),
        help=om.MultiformatMessageString(text=_plain(doc) or summary, markdown=doc or summary),
        help_uri=getattr(rule, "help_uri", None) or None,
        default_configuration=om.ReportingConfiguration(level=LEVELS[severity]),
        properties={
            "precision": getattr(rule, "precision", None) or "high",
            "problem.severity": PROBLEM_SEVERITY[severity],
            "tags": tags,
        },
    )


def _result(finding: Finding, index: dict, root: Path, display_root: Path, seen: Counter) -> om.Result:
    related = []
    links = []
    for number, item in enumerate(finding.related, start=1):
        related.append(om.Location(
            id=number,
            physical_location=_physical(item.origin, root, display_root),
            message=om.Message(text=_escape(item.message) or "related value"),
        ))
        links.append(f"[{_escape(_where(item.origin))}]({number}): {_escape(item.message)}")
    text = _escape(finding.message.strip()) or finding.rule_id
    if not text.endswith("."):
        text += "."
    if links:
        text += " Related: " + "; ".join(links) + "."
    uri = _uri(finding.location.path, root, display_root)[0]
    key = "\0".join([finding.rule_id, uri, ",".join(sorted(finding.fields)), recipe_function(finding)])
    digest = hashlib.sha256(key.encode("utf-8")).hexdigest()[:32]
    seen[digest] += 1
    result = om.Result(
        rule_id=finding.rule_id,
        rule_index=index.get(finding.rule_id, -1),
        level=LEVELS[finding.severity],
        message=om.Message(text=text),
        locations=[om.Location(physical_location=_physical(finding.location, root, display_root))],
        related_locations=related or None,
        partial_fingerprints={"mblint/v1": f"{digest}:{seen[digest]}"},
    )
    if finding.recipe:
        result.properties = {"recipe": finding.recipe, "fields": list(finding.fields)}
        if finding.recipes:
            result.properties["recipes"] = list(finding.recipes)
    return result


def _where(origin: Origin) -> str:
    return f"{origin.path}:{origin.line}"


def _uri(display_path: str, root: Path, display_root: Path) -> tuple[str, bool]:
    """The URI of a file and whether it is relative to %SRCROOT%."""
    absolute = Path(os.path.normpath(display_root / display_path))
    try:
        absolute = absolute.resolve()
    except OSError:
        pass
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return absolute.as_uri(), False
    return quote(os.fsencode(relative.as_posix()), safe="/"), True  # the raw bytes of a name that is not UTF-8


def _physical(origin: Origin, root: Path, display_root: Path) -> om.PhysicalLocation:
    uri, relative = _uri(origin.path, root, display_root)
    artifact = om.ArtifactLocation(uri=uri, uri_base_id=SRCROOT if relative else None)
    line = max(origin.line, 1)
    column = max(origin.column, 1)
    end_line = max(origin.end_line, line)
    end_column = origin.end_column if origin.end_column >= 1 else column + 1
    if end_line == line and end_column <= column:
        end_column = column + 1
    region = om.Region(start_line=line, start_column=column, end_line=end_line, end_column=end_column)
    return om.PhysicalLocation(artifact_location=artifact, region=region)


def _escape(text: str) -> str:
    """SARIF message text: literal ``[`` and ``]`` (and ``\\``) are escaped so only our
    ``[text](id)`` links are links."""
    return re.sub(r"([\\\[\]])", r"\\\1", text)


def _clip(text: str, limit: int = 1024) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _first_section(doc: str) -> str:
    match = re.search(r"##\s*What it does\s*\n(.*?)(?=\n##\s|\Z)", doc, re.S)
    return " ".join(match.group(1).split()) if match else ""


def _plain(markdown: str) -> str:
    text = re.sub(r"^#+\s*", "", markdown, flags=re.M)
    return text.replace("`", "")


# ----- serialisation --------------------------------------------------------------------


def to_dict(value: Any) -> Any:
    """sarif-om objects to JSON values: attributes renamed by ``schema_property_name``;
    None, empty containers and attrs defaults dropped (except ``level``)."""
    if attr.has(type(value)):
        out = {}
        for attribute in attr.fields(type(value)):
            item = getattr(value, attribute.name)
            name = attribute.metadata.get("schema_property_name", attribute.name)
            if item is None or (isinstance(item, (list, dict, tuple)) and not item and name not in KEEP_EMPTY):
                continue
            default = attribute.default
            if isinstance(default, attr.Factory):  # type: ignore[arg-type]
                default = default.factory()
            if name not in ALWAYS_KEEP and default is not attr.NOTHING and item == default:
                continue
            out[name] = to_dict(item)
        return out
    if isinstance(value, dict):
        return {str(k): to_dict(v) for k, v in value.items() if v is not None}
    if isinstance(value, (list, tuple)):
        return [to_dict(v) for v in value]
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, (str, int, float, bool)):
        return value
    raise TypeError(f"cannot serialise {type(value).__name__} to SARIF")
