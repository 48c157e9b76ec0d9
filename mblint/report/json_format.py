"""The JSON output. Its shape is documented in README.md and kept stable (``version`` 1)."""

from __future__ import annotations

import json

from mblint.coverage import jobs_not_fully_checked
from mblint.findings import Finding
from mblint.model import json_value
from mblint.results import Report


def finding_json(finding: Finding) -> dict:
    found = {
        "rule": finding.rule_id,
        "name": finding.rule_name,
        "severity": finding.severity.label,
        "message": finding.message,
        "location": finding.location.to_json(),
        "related": [{"location": r.origin.to_json(), "message": r.message} for r in finding.related],
        "fields": list(finding.fields),
        "recipe": finding.recipe,
        "fixes": [
            {"action": f.action, "field": f.field, "value": json_value(f.value), "new_field": f.new_field,
             "safe": f.safe, "description": f.description, "alternative": f.alternative}
            for f in finding.fixes
        ],
    }
    if finding.recipes:  # the finding stands for these recipes, which share its line
        found["recipes"] = list(finding.recipes)
    return found


def render(report: Report) -> str:
    jobs, reasons = jobs_not_fully_checked(report)
    document = {
        "version": 1,
        "findings": [finding_json(f) for f in report.findings],
        "errors": [{"path": e.path, "line": e.line, "column": e.column, "message": e.message} for e in report.errors],
        "summary": {"files": report.files, "recipes": report.recipes, "resolved": report.resolved,
                    "findings": len(report.findings), "suppressed": report.suppressed,
                    "baselined": report.baselined, "stale_baseline": [str(e) for e in report.stale_baseline],
                    "not_analysed": [{"path": path, "reason": reason} for path, reason in report.not_analysed],
                    "not_fully_checked": {"jobs": jobs, "by_rule": reasons}},
        "schemas": list(getattr(report, "schemas", ())),
    }
    return json.dumps(document, indent=2) + "\n"
