"""The rule reference (docs/rules/), generated from the rule classes: one page per rule and an
index. Regenerate after changing a rule's documentation:

    python -m mblint.rule_docs docs/rules

``tests/test_rule_docs.py`` fails when the pages on disk differ from what this writes.
"""

from __future__ import annotations

import sys
from functools import lru_cache
from pathlib import Path

OWN_PACKAGES = ("mblint", "mblint_rules")  # the engine's rules and the built-in pack, documented in docs/rules/


@lru_cache(maxsize=1)
def project_urls() -> dict[str, str]:
    """mblint's ``[project.urls]`` from its package metadata, by lower-cased label; {} when
    there are none or the metadata cannot be read."""
    try:
        from importlib.metadata import metadata

        entries = metadata("mblint").get_all("Project-URL") or []
    except Exception:  # noqa: BLE001 - metadata is optional
        return {}
    urls = {}
    for entry in entries:
        label, _, url = entry.partition(",")
        if url.strip():
            urls[label.strip().lower()] = url.strip()
    return urls


def documentation_uri(rule_id: str) -> str | None:
    """The page of one of mblint's own rules, docs/rules/<ID>.md in mblint's repository (the
    ``Repository`` or ``Source`` URL of its metadata), as GitHub serves a file of the main
    branch; None when the metadata names no repository."""
    urls = project_urls()
    repository = urls.get("repository") or urls.get("source")
    if not repository or not rule_id:
        return None
    return f"{repository.rstrip('/')}/blob/main/docs/rules/{rule_id}.md"


class RuleDocumentation:
    """``Rule.help_uri``: for a rule of mblint's own (the engine's, the built-in pack's) its page
    in mblint's repository, found when first asked (the metadata is read only by the reports
    that link to it); None for another pack's rule unless the rule sets ``help_uri`` itself."""

    def __get__(self, instance, owner) -> str | None:
        if owner.__module__.split(".")[0] not in OWN_PACKAGES:
            return None
        return documentation_uri(owner.id)


def rule_page(rule) -> str:
    """The Markdown page of one rule class."""
    fix = ("yes (a fix that replaces a value written in a linted file or override is applied only with "
           "`--unsafe-fixes`, whatever this page calls it)" if rule.fixable else "no")
    lines = [
        f"# {rule.id} {rule.name}",
        "",
        f"{rule.summary}",
        "",
        f"- Severity: {rule.severity_label()}",
        f"- Megatron-Bridge versions: {', '.join(rule.versions) or 'all'}",
    ]
    if getattr(rule, "requires", ()):
        lines.append(f"- Requires (of the release's schema): {', '.join(rule.requires)}")
    lines.append(f"- Fix: {fix}")
    if getattr(rule, "supersedes", ()):
        lines.append(f"- Replaces the finding of {', '.join(rule.supersedes)} on the same problem "
                     "(when both rules are selected)")
    if rule.tags:
        lines.append(f"- Tags: {', '.join(rule.tags)}")
    lines += ["", _demoted(rule.doc.strip()), ""]
    return "\n".join(lines)


def _demoted(markdown: str) -> str:
    """The rule's own ``## `` sections one level down, under the page title (code blocks
    left as they are)."""
    lines, in_code = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            in_code = not in_code
        lines.append("#" + line if line.startswith("#") and not in_code else line)
    return "\n".join(lines)


def index_page(rules: list) -> str:
    lines = ["# Rules", "", "Generated from the rule classes by `python -m mblint.rule_docs docs/rules`.", "",
             "| Id | Name | Severity | Fix | Summary |", "|---|---|---|---|---|"]
    for rule in rules:
        summary = rule.summary.replace("|", "\\|")
        lines.append(f"| [{rule.id}]({rule.id}.md) | {rule.name} | {rule.severity_label()} | "
                     f"{'yes' if rule.fixable else 'no'} | {summary} |")
    return "\n".join(lines) + "\n"


def pages(rules: list) -> dict[str, str]:
    """File name -> text of every page, for ``rules`` sorted by id."""
    ordered = sorted(rules, key=lambda rule: rule.id)
    found = {f"{rule.id}.md": rule_page(rule) for rule in ordered}
    found["README.md"] = index_page(ordered)
    return found


def all_rules() -> list:
    from mblint.plugins import load_plugins

    return load_plugins().rules


def write(folder: Path, rules: list) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    wanted = pages(rules)
    for stale in folder.glob("*.md"):
        if stale.name not in wanted:
            stale.unlink()
    for name, text in wanted.items():
        (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    write(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/rules"), all_rules())
