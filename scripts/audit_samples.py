"""The samples of a precision audit (docs/precision-audit.md): per rule of an `mblint check
--format json` report, its count by severity and three findings (first, middle and last in
recipe order; all when fewer), each with the source line it points at and its first related
line. The verdicts are written by hand.

    cd /work/mb/0.6.2 && mblint check megatron/bridge/recipes megatron/bridge/perf_recipes \\
        --format json --no-cache > /tmp/0.6.2.json
    python scripts/audit_samples.py /tmp/0.6.2.json /work/mb/0.6.2
"""

from __future__ import annotations

import argparse
import collections
import json
from pathlib import Path

PREFIX = "megatron/bridge/"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path, help="the JSON output of mblint check")
    parser.add_argument("root", type=Path, help="the folder the check ran in (paths are relative to it)")
    args = parser.parse_args()
    findings = json.loads(args.report.read_text(encoding="utf-8"))["findings"]
    by_rule = collections.defaultdict(list)
    for finding in findings:
        by_rule[finding["rule"]].append(finding)
    for rule in sorted(by_rule):
        print(rule_section(rule, sorted(by_rule[rule], key=recipe_order), args.root))


def recipe_order(finding: dict) -> tuple:
    return finding["recipe"].rpartition("::")[2], finding["location"]["path"], finding["location"]["line"]


def rule_section(rule: str, findings: list[dict], root: Path) -> str:
    severities = collections.Counter(finding["severity"] for finding in findings)
    counts = ", ".join(f"{severity} {count}" for severity, count in sorted(severities.items()))
    lines = [f"#### {rule} x{len(findings)} ({counts})"]
    picks = sorted({0, len(findings) // 2, len(findings) - 1})
    lines += [sample(findings[index], root) for index in picks]
    return "\n".join(lines) + "\n"


def sample(finding: dict, root: Path) -> str:
    function = finding["recipe"].rpartition("::")[2]
    text = f"- `{function}`: {finding['message'][:100]}…  \n  at {place(finding['location'], root)}"
    if finding["related"]:
        text += f"; rel {place(finding['related'][0]['location'], root)}"
    return text


def place(location: dict, root: Path) -> str:
    path, line = location["path"], location["line"]
    return f"`{path.removeprefix(PREFIX)}:{line}` `{source_line(root / path, line)}`"


def source_line(path: Path, line: int) -> str:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return "?"
    return lines[line - 1].strip()[:60].replace("`", "'") if 0 < line <= len(lines) else "?"


if __name__ == "__main__":
    main()
