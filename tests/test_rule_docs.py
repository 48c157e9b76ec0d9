"""docs/rules/ is generated from the rule classes (mblint.rule_docs) and kept current."""

from __future__ import annotations

from pathlib import Path

from mblint.rule_docs import all_rules, pages

DOCS = Path(__file__).parent.parent / "docs" / "rules"


def test_the_rule_reference_is_current():
    wanted = pages(all_rules())
    on_disk = {path.name: path.read_text(encoding="utf-8") for path in DOCS.glob("*.md")}
    stale = sorted(name for name in wanted.keys() | on_disk.keys() if wanted.get(name) != on_disk.get(name))
    assert not stale, f"docs/rules is stale ({', '.join(stale[:5])}...): run python -m mblint.rule_docs docs/rules"


def test_a_page_holds_the_rules_documentation():
    rule = next(rule for rule in all_rules() if rule.id == "PK001")
    page = pages([rule])["PK001.md"]
    assert page.startswith("# PK001 offline-packing-requires-mbs1\n")
    assert "### What it does" in page and "- Severity: error" in page
