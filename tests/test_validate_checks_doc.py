"""docs/validate-checks.md names only rules that exist, and every row says a rule or why not."""

from __future__ import annotations

import re
from pathlib import Path

from mblint.rule_docs import all_rules

TABLE = Path(__file__).parent.parent / "docs" / "validate-checks.md"


def _rows() -> list[list[str]]:
    lines = TABLE.read_text(encoding="utf-8").splitlines()
    return [[cell.strip() for cell in re.split(r"(?<!\\)\|", line)[1:-1]]
            for line in lines if line.startswith("| `")]


def test_every_rule_the_table_names_exists():
    ids = {rule.id for rule in all_rules()}
    named = {rule_id for row in _rows() for rule_id in re.findall(r"\b[A-Z]{2}\d{3}\b", row[2])}
    assert named and not named - ids, f"not a rule: {sorted(named - ids)}"


def test_every_row_has_a_source_line_and_a_verdict():
    for check, source, verdict in _rows():
        assert re.fullmatch(r"megatron/(bridge|core)/[\w/]+\.py:\d+", source), source
        assert re.fullmatch(r"[A-Z]{2}\d{3}(, [A-Z]{2}\d{3})*|not static: .+|static, not covered(: .+)?", verdict), \
            f"{source}: {verdict!r}"
