"""SARIF (schema + GitHub checks), GitHub annotations, and several outputs at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from integration_support import BAD_RECIPE, PK001_LINE, check_sarif, github_problems, recipe, run


@pytest.fixture
def bad_repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()  # the repository root SARIF URIs are relative to
    (tmp_path / "recipes").mkdir()
    (tmp_path / "recipes" / "my recipe.py").write_text(BAD_RECIPE)
    return tmp_path


def sarif_of(cwd: Path, *args: str) -> dict:
    result = run(["check", "--format", "sarif", *args], cwd)
    assert result.exit_code in (0, 1), result.stderr
    document = json.loads(result.stdout)
    check_sarif(document)
    return document


def test_sarif_result_shape(bad_repo: Path) -> None:
    document = sarif_of(bad_repo, "recipes")
    run_ = document["runs"][0]
    driver = run_["tool"]["driver"]
    ids = [r["id"] for r in driver["rules"]]
    assert ids == ["PK001"]  # the rules the results refer to, no other
    pk = driver["rules"][ids.index("PK001")]
    assert pk["name"] == "offline-packing-requires-mbs1"
    assert pk["defaultConfiguration"]["level"] == "error"
    assert "## Why it matters" in pk["help"]["markdown"]
    assert pk["properties"]["precision"] in ("very-high", "high", "medium", "low")
    assert "packing" in pk["properties"]["tags"]

    [result] = [r for r in run_["results"] if r["ruleId"] == "PK001"]
    assert result["ruleIndex"] == ids.index("PK001")
    assert result["level"] == "error"
    assert result["message"]["text"].startswith("train.micro_batch_size is 2, but offline sequence packing requires 1")
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"] == {"uri": "recipes/my%20recipe.py", "uriBaseId": "%SRCROOT%"}
    line = BAD_RECIPE.splitlines()[PK001_LINE - 1]
    column = line.index("micro_batch_size=2") + 1
    assert physical["region"] == {"startLine": PK001_LINE, "startColumn": column, "endLine": PK001_LINE,
                                  "endColumn": column + len("micro_batch_size=2")}
    assert run_["originalUriBaseIds"]["%SRCROOT%"]["uri"] == bad_repo.resolve().as_uri() + "/"
    [related] = result["relatedLocations"]
    assert related["id"] == 1
    assert f"]({related['id']})" in result["message"]["text"]  # linked from the message
    assert related["physicalLocation"]["region"]["startLine"] == PK001_LINE + 3
    assert "mblint/v1" in result["partialFingerprints"]


def test_sarif_uris_relative_to_repository_root_not_cwd(bad_repo: Path) -> None:
    document = sarif_of(bad_repo / "recipes", "my recipe.py")
    uri = document["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
    assert uri == "recipes/my%20recipe.py"


def test_fingerprint_survives_line_edits(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    before = sarif_of(tmp_path, "r.py")["runs"][0]["results"][0]
    (tmp_path / "r.py").write_text(recipe(2, prefix="\n\nX = 1\n"))
    after = sarif_of(tmp_path, "r.py")["runs"][0]["results"][0]
    assert after["locations"][0]["physicalLocation"]["region"]["startLine"] == PK001_LINE + 3
    assert before["partialFingerprints"] == after["partialFingerprints"]
    (tmp_path / "r.py").write_text(recipe(2, function="other_config"))
    renamed = sarif_of(tmp_path, "r.py")["runs"][0]["results"][0]
    assert renamed["partialFingerprints"] != before["partialFingerprints"]


def test_clean_run_and_suppressed_results_are_left_out(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(recipe(2, comment="  # mblint: ignore[PK001] reviewed"))
    document = sarif_of(tmp_path, "r.py")
    assert document["runs"][0].get("results", []) == []
    assert document["runs"][0]["tool"]["driver"]["rules"] == []  # required, and no rule is referred to


def test_sarif_message_escapes_brackets() -> None:
    from mblint.findings import Finding, Related, Severity
    from mblint.model import Origin
    from mblint.report.sarif import build_log, to_dict
    from mblint.results import Report
    from mblint.rule import Rule

    class R(Rule):
        id, name, summary, doc = "XX001", "x", "Summary.", "## What it does\nThings."

    origin = Origin("a.py", 3, 1, 3, 1)  # empty range: must still be a valid region
    finding = Finding("XX001", "x", Severity.INFO, "value [1, 2] is odd", origin,
                      related=(Related(Origin("b.py", 1, 2, 1, 5), "set [here]"),))
    document = to_dict(build_log(Report(findings=[finding], rules=[R]), root=Path("/repo"), display_root=Path("/repo")))
    check_sarif(document)
    result = document["runs"][0]["results"][0]
    assert result["message"]["text"].startswith(r"value \[1, 2\] is odd.")
    assert "(1)" in result["message"]["text"]
    assert result["level"] == "note"
    assert result["locations"][0]["physicalLocation"]["region"]["endColumn"] == 2


def test_github_checks_catch_bad_sarif() -> None:
    """The GitHub checker itself must reject what GitHub rejects."""
    bad = {"version": "2.1.0", "$schema": "x", "runs": [{"tool": {"driver": {"name": "mblint", "rules": [
        {"id": "A", "shortDescription": {"text": ""}, "fullDescription": {"text": "x"}, "help": {"text": "x"}}]}},
        "results": [{"ruleId": "A", "message": {"text": "m"}, "locations": []}]}]}
    problems = "\n".join(github_problems(bad))
    assert "shortDescription.text empty" in problems and "no location" in problems
    assert "defaultConfiguration.level missing" in problems


def test_sarif_of_wheel_recipes_validates(mb06: Path, monkeypatch) -> None:
    """Real 0.6.2 recipes, with an extra rule that reports on every recipe (related
    locations included) so that results exist whatever rules the pack holds today."""
    from mblint.engine import CheckOptions, Engine
    from mblint.findings import Severity
    from mblint.plugins import LoadedPlugins, load_plugins
    from mblint.report.sarif import render
    from mblint.rule import Rule, format_value

    class Everywhere(Rule):
        id, name, severity = "ZZ999", "everywhere", Severity.INFO
        summary, doc, tags = "Reports every batch setting.", "## What it does\nTesting.", ("test",)

        def check(self, cfg, ctx):
            mbs = cfg.value("train.micro_batch_size")
            yield ctx.report(cfg, f"train.micro_batch_size is {format_value(mbs)} [test]",
                             ["train.micro_batch_size", "train.global_batch_size"])

    monkeypatch.chdir(mb06)
    loaded = load_plugins()
    engine = Engine(CheckOptions(), LoadedPlugins(rules=loaded.rules + [Everywhere]))
    # a sample of real recipe folders (all of recipes/ and perf_recipes/ takes about a minute)
    folders = [f"megatron/bridge/recipes/{name}" for name in ("llama", "qwen", "deepseek")]
    report = engine.check_paths(folders)
    document = json.loads(render(report))
    check_sarif(document)
    results = document["runs"][0]["results"]
    assert len(results) > 10
    assert any(r.get("relatedLocations") for r in results)


# ----- GitHub annotations -----------------------------------------------------------------


def test_github_format_and_escaping(tmp_path: Path) -> None:
    from mblint.report.github import escape_data, escape_property

    assert escape_data("50%\r\nnext") == "50%25\\x0d\\x0anext"  # line breaks from a linted file: neutralised
    assert escape_property("a:b,c%") == "a%3Ab%2Cc%25"
    (tmp_path / "dir, a:b").mkdir()
    (tmp_path / "dir, a:b" / "r.py").write_text(BAD_RECIPE)
    result = run(["check", "--format", "github", "."], tmp_path)
    assert result.exit_code == 1
    line = result.stdout.splitlines()[0]
    assert line.startswith(f"::error file=dir%2C a%3Ab/r.py,line={PK001_LINE},col=")
    assert ",endLine=8,endColumn=" in line and ",title=mblint PK001 (offline-packing-requires-mbs1)::" in line
    message = line.split("::", 2)[2]
    assert "\n" not in message and "%0Arelated: dir, a:b/r.py:11:" in message


def test_github_format_chosen_on_actions(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    on_actions = run(["check", "r.py"], tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert on_actions.stdout.startswith("::error file=r.py,")
    explicit = run(["check", "--format", "text", "r.py"], tmp_path, env={"GITHUB_ACTIONS": "true"})
    assert explicit.stdout.startswith(f"r.py:{PK001_LINE}:")
    (tmp_path / ".git").mkdir()
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "r.py").write_text(BAD_RECIPE)
    nested = run(["check", "--format", "github", "r.py"], tmp_path / "sub")
    assert nested.stdout.startswith("::error file=sub/r.py,")  # relative to the repository root
    local = run(["check", "r.py"], tmp_path)
    assert local.stdout.startswith(f"r.py:{PK001_LINE}:")


# ----- several outputs --------------------------------------------------------------------


def test_several_outputs_at_once(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    result = run(["check", "r.py", "--output-sarif", "out/x.sarif", "--output-json", "x.json",
                  "--output-file", "github=x.gh"], tmp_path)
    assert result.exit_code == 1, result.stderr
    assert result.stdout.startswith(f"r.py:{PK001_LINE}:")  # text still on the terminal
    check_sarif(json.loads((tmp_path / "out" / "x.sarif").read_text()))
    assert json.loads((tmp_path / "x.json").read_text())["findings"][0]["rule"] == "PK001"
    assert (tmp_path / "x.gh").read_text().startswith("::error ")


def test_bad_output_file_spec_is_usage_error(tmp_path: Path) -> None:
    (tmp_path / "r.py").write_text(BAD_RECIPE)
    result = run(["check", "r.py", "--output-file", "xml=x"], tmp_path)
    assert result.exit_code == 2


def test_sarif_embeds_only_the_rules_its_results_refer_to(tmp_path: Path) -> None:
    """Two findings of one rule: one rule descriptor, and a file of a few kilobytes (it was
    422 KB with every rule's documentation embedded)."""
    (tmp_path / "a.py").write_text(recipe(2))
    (tmp_path / "b.py").write_text(recipe(2, function="other_config"))
    result = run(["check", "--no-cache", "--format", "sarif", "."], tmp_path)
    document = json.loads(result.stdout)
    check_sarif(document)
    assert [r["id"] for r in document["runs"][0]["tool"]["driver"]["rules"]] == ["PK001"]
    assert len(document["runs"][0]["results"]) == 2
    assert len(result.stdout) < 20_000, len(result.stdout)
    warning = run(["check", "--no-cache", "--format", "sarif", "--select", "SY003", "."], tmp_path)
    assert json.loads(warning.stdout)["runs"][0]["tool"]["driver"]["rules"] == []
    (tmp_path / "conf.yaml").write_text("train:\n  micro_batch_size: 2\n")  # unpaired: SY005, a warning
    unpaired = json.loads(run(["check", "--no-cache", "--format", "sarif", "conf.yaml"], tmp_path).stdout)
    [rule] = unpaired["runs"][0]["tool"]["driver"]["rules"]
    assert rule["id"] == "SY005" and rule["defaultConfiguration"]["level"] == "warning"  # kept though the default


REPOSITORY = "https://github.com/example-org/mblint"


def test_rules_link_to_their_documentation_page(tmp_path: Path, monkeypatch) -> None:
    """helpUri: docs/rules/<ID>.md in mblint's repository (its metadata's Repository URL),
    for mblint's own rules (the built-in pack's PK001 and SY005)."""
    from mblint import rule_docs

    monkeypatch.setattr(rule_docs, "project_urls", lambda: {"repository": REPOSITORY + "/"})
    (tmp_path / "r.py").write_text(recipe(2))
    (tmp_path / "conf.yaml").write_text("train:\n  micro_batch_size: 2\n")  # unpaired: SY005
    document = sarif_of(tmp_path, "--no-cache", "--isolated", "r.py", "conf.yaml")
    uris = {rule["id"]: rule["helpUri"] for rule in document["runs"][0]["tool"]["driver"]["rules"]}
    assert uris == {"PK001": f"{REPOSITORY}/blob/main/docs/rules/PK001.md",
                    "SY005": f"{REPOSITORY}/blob/main/docs/rules/SY005.md"}
    repo = Path(__file__).resolve().parents[1]
    assert all((repo / "docs" / "rules" / f"{rule_id}.md").is_file() for rule_id in uris)


def test_a_rule_packs_rule_has_its_own_help_uri_or_none(monkeypatch) -> None:
    from mblint import rule_docs
    from mblint.rulekit import Rule

    monkeypatch.setattr(rule_docs, "project_urls", lambda: {"repository": REPOSITORY})

    class Theirs(Rule):
        id = "XX001"

    class Documented(Rule):
        id = "XX002"
        help_uri = "https://example.org/rules/XX002"

    assert Theirs.help_uri is None  # not mblint's: no page in mblint's repository
    assert Documented.help_uri == "https://example.org/rules/XX002"
    monkeypatch.setattr(rule_docs, "project_urls", lambda: {})
    from mblint_rules.syntax.sy005_not_analysed import NotAnalysedRule

    assert NotAnalysedRule.help_uri is None  # no repository named: no link rather than a wrong one
