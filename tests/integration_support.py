"""Shared pieces for the integration tests: a recipe PK001 flags, a clean one, a CLI runner
and the SARIF checks (official schema plus GitHub's required fields)."""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path

from click.testing import CliRunner

REPO = Path(__file__).resolve().parents[1]


# The official SARIF 2.1.0 schema; source, licence and checksum in tests/data/README.md.
SARIF_SCHEMA = REPO / "tests" / "data" / "sarif-schema-2.1.0.json"

IMPORTS = """from megatron.bridge.training.config import ConfigContainer, TrainingConfig
from megatron.bridge.data.builders import GPTSFTDatasetConfig
from megatron.bridge.data.packing import PackedSequenceSpecs
"""


def recipe(mbs: int = 2, function: str = "sft_config", comment: str = "", prefix: str = "") -> str:
    """A self-contained recipe with offline packing; PK001 fires when ``mbs`` > 1 (line 9)."""
    return IMPORTS + prefix + f"""

def {function}() -> ConfigContainer:
    cfg = ConfigContainer(
        train=TrainingConfig(micro_batch_size={mbs}, global_batch_size=8),{comment}
        dataset=GPTSFTDatasetConfig(
            seq_length=2048, dataset_root="/data/sft",
            enable_offline_packing=True,
            offline_packing_specs=PackedSequenceSpecs(packed_sequence_size=2048),
        ),
    )
    return cfg
"""


# CUDA graphs without Transformer Engine's RNG tracker: CG003, whose fix is safe.
FIXABLE_RECIPE = """from megatron.bridge.models import GPTModelProvider
from megatron.bridge.training.config import ConfigContainer, TrainingConfig


def graphs_config() -> ConfigContainer:
    cfg = ConfigContainer(
        model=GPTModelProvider(num_layers=2, hidden_size=64, num_attention_heads=4),
        train=TrainingConfig(micro_batch_size=1, global_batch_size=8),
    )
    cfg.model.cuda_graph_impl = "transformer_engine"
    return cfg
"""

BAD_RECIPE = recipe(2)
GOOD_RECIPE = recipe(1)
PK001_LINE = 8


def run(args: list[str], cwd: Path, env: dict | None = None):
    """Run the CLI in-process from ``cwd``; returns click's Result (exit_code, stdout, stderr)."""
    from mblint.cli import main

    old = Path.cwd()
    os.chdir(cwd)
    try:
        environment = {"GITHUB_ACTIONS": None, **(env or {})}
        try:
            runner = CliRunner(mix_stderr=False)
        except TypeError:  # click >= 8.2 always separates stderr
            runner = CliRunner()
        return runner.invoke(main, args, env=environment, catch_exceptions=False)
    finally:
        os.chdir(old)


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def check_sarif(document: dict) -> None:
    """Fails unless ``document`` is valid SARIF 2.1.0 that GitHub code scanning accepts."""
    errors = sorted(_validator().iter_errors(document), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:10])
    problems = github_problems(document)
    assert not problems, "\n".join(problems)


def github_problems(document: dict) -> list[str]:
    """GitHub's required-field list (docs: sarif-support.md, sarif-limits)."""
    problems = []
    if document.get("version") != "2.1.0":
        problems.append("version must be 2.1.0")
    if not document.get("$schema"):
        problems.append("$schema missing")
    runs = document.get("runs") or []
    if len(runs) != 1:
        problems.append(f"expected one run, got {len(runs)}")
    for run in runs:
        driver = run["tool"]["driver"]
        if not driver.get("name"):
            problems.append("tool.driver.name empty")
        rules = driver.get("rules")
        if rules is None:
            problems.append("tool.driver.rules missing")
            rules = []
        if len(rules) > 25_000:
            problems.append("too many rules")
        ids = [r.get("id") for r in rules]
        if ids != sorted(ids) or len(set(ids)) != len(ids):
            problems.append("rules not sorted by id or duplicated")
        for rule in rules:
            for key in ("shortDescription", "fullDescription", "help"):
                text = (rule.get(key) or {}).get("text", "")
                if not text.strip():
                    problems.append(f"rule {rule.get('id')}: {key}.text empty")
                if key != "help" and len(text) > 1024:
                    problems.append(f"rule {rule.get('id')}: {key}.text longer than 1024")
            if rule.get("defaultConfiguration", {}).get("level") not in ("error", "warning", "note"):
                problems.append(f"rule {rule.get('id')}: defaultConfiguration.level missing")
            if len(rule.get("properties", {}).get("tags", [])) > 20:
                problems.append(f"rule {rule.get('id')}: more than 20 tags")
            if "security-severity" in rule.get("properties", {}):
                problems.append(f"rule {rule.get('id')}: security-severity set")
        results = run.get("results", [])
        if len(results) > 25_000:
            problems.append("too many results")
        for i, result in enumerate(results):
            where = f"result {i} ({result.get('ruleId')})"
            if not result.get("message", {}).get("text", "").strip():
                problems.append(f"{where}: empty message")
            if result.get("ruleIndex") is not None and ids[result["ruleIndex"]] != result.get("ruleId"):
                problems.append(f"{where}: ruleIndex does not point at ruleId")
            if result.get("ruleId") not in ids:
                problems.append(f"{where}: no rule {result.get('ruleId')} in tool.driver.rules")
            locations = result.get("locations") or []
            if not locations:
                problems.append(f"{where}: no location")
            if len(locations) > 1000 or len(result.get("relatedLocations", [])) > 1000:
                problems.append(f"{where}: too many locations")
            for loc in locations + result.get("relatedLocations", []):
                physical = loc["physicalLocation"]
                uri = physical["artifactLocation"]["uri"]
                if not uri:
                    problems.append(f"{where}: empty uri")
                if physical["artifactLocation"].get("uriBaseId") and ("://" in uri or uri.startswith("/")):
                    problems.append(f"{where}: absolute uri {uri} under a uriBaseId")
                if "\\" in uri or " " in uri:
                    problems.append(f"{where}: uri {uri!r} not POSIX / percent-encoded")
                region = physical.get("region", {})
                for key in ("startLine", "startColumn", "endLine", "endColumn"):
                    if region and region.get(key, 0) < 1:
                        problems.append(f"{where}: region.{key} missing or < 1")
            primary = locations[0]["physicalLocation"]["artifactLocation"] if locations else {}
            if "://" in primary.get("uri", "") or primary.get("uri", "").startswith("/"):
                problems.append(f"{where}: primary uri {primary.get('uri')} is not repository-relative")
    return problems
