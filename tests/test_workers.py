"""The worker pool (mblint.workers) and the engine's use of it: every unit answered exactly once,
a failed or dead worker's units computed by this process, the report the same as a single
process gives, small inputs checked without workers."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mblint import workers
from mblint.engine import CheckOptions, Engine
from mblint.report.json_format import render as render_json

pytestmark = pytest.mark.skipif(not workers.can_fork(), reason="needs a fork start method")
FIXTURES = Path(__file__).parent.parent / "fixtures"


def test_every_unit_is_answered_once():
    answers = list(workers.run_units(lambda unit: unit * 2, list(range(40)), jobs=3))
    assert sorted(answers) == [(index, index * 2) for index in range(40)]


def test_the_units_of_a_worker_that_failed_or_died_are_computed_here():
    parent = os.getpid()

    def work(unit):  # the first units always go to the workers
        if unit == 0 and os.getpid() != parent:
            raise RuntimeError("a failure inside the worker")
        if unit == 1 and os.getpid() != parent:
            os._exit(9)  # as if killed
        return unit, os.getpid()

    answers = list(workers.run_units(work, list(range(8)), jobs=3))
    assert sorted(index for index, _ in answers) == list(range(8))
    answers = dict(answers)
    assert all(answers[index][0] == index for index in range(8))
    assert answers[0] == (0, parent) and answers[1] == (1, parent)


def reports(tmp_path: Path, monkeypatch, copies: int) -> dict[int, str]:
    for index in range(copies):
        shutil.copytree(FIXTURES / "resolve" / "myrecipes", tmp_path / f"team{index % 3}" / f"copy{index}")
    monkeypatch.chdir(tmp_path)

    def report(jobs: int) -> str:
        engine = Engine(CheckOptions(jobs=jobs))
        engine.display_root = tmp_path
        return render_json(engine.check_paths(["."]))

    return {jobs: report(jobs) for jobs in (1, 2, 3)}


def test_the_engine_reports_the_same_with_workers_as_in_one_process(tmp_path, monkeypatch):
    by_jobs = reports(tmp_path, monkeypatch, copies=12)
    assert '"rule": "CP002"' in by_jobs[1], "the fixture recipes have findings"
    assert by_jobs[2] == by_jobs[1] and by_jobs[3] == by_jobs[1]


def test_the_files_of_a_worker_that_died_are_still_checked(tmp_path, monkeypatch):
    parent = os.getpid()
    check = Engine.check_file_guarded

    def dying_in_a_worker(self, path):
        if os.getpid() != parent and "copy" in str(path):
            os._exit(9)  # as if killed
        return check(self, path)

    monkeypatch.setattr(Engine, "check_file_guarded", dying_in_a_worker)
    by_jobs = reports(tmp_path, monkeypatch, copies=12)
    assert '"rule": "CP002"' in by_jobs[1]
    assert by_jobs[2] == by_jobs[1] and by_jobs[3] == by_jobs[1]


def test_a_recipe_changing_a_module_level_object_does_not_change_another_recipe(tmp_path):
    """Recipes are resolved one after another in one process (a worker's share of the files in
    any order), so what one recipe does to a module-level object must not reach the next: each
    read of it through the module gets its own copy, as a read by name does."""
    from mblint.resolve import Project

    team = tmp_path / "team"
    team.mkdir()
    (team / "__init__.py").write_text("")
    (team / "shared.py").write_text('SETTINGS = {"mbs": 1}\n')
    (team / "recipes.py").write_text(
        "from megatron.bridge.training.config import ConfigContainer, TrainingConfig\n"
        "from team import shared\n\n\n"
        "def mutating_config():\n"
        '    shared.SETTINGS["mbs"] = 4\n'
        "    return ConfigContainer(train=TrainingConfig(micro_batch_size=2, global_batch_size=8))\n\n\n"
        "def reading_config():\n"
        '    return ConfigContainer(train=TrainingConfig(micro_batch_size=shared.SETTINGS["mbs"], global_batch_size=8))\n')

    def micro_batch_sizes(order: list[str]) -> dict[str, object]:
        project = Project([], "0.6", tmp_path)
        return {name: project.resolve_function(team / "recipes.py", name).value("train.micro_batch_size")
                for name in order}

    assert micro_batch_sizes(["reading_config"])["reading_config"] == 1
    assert micro_batch_sizes(["mutating_config", "reading_config"])["reading_config"] == 1


def test_workers_are_started_by_the_amount_of_source(tmp_path, monkeypatch):
    from mblint import workers

    monkeypatch.setattr(workers.os, "sched_getaffinity", lambda pid: {0, 1, 2, 3}, raising=False)
    small = [tmp_path / "a.py", tmp_path / "b.py"]
    for path in small:
        path.write_text("x = 1\n" * 1000)  # 6 KB each: not worth a worker
    def sizes(paths):
        return {path: workers.file_size(path) for path in paths}

    assert workers.default_jobs(sizes(small)) == 1
    large = [tmp_path / f"big{i}.py" for i in range(5)]
    for path in large:
        path.write_text("x = 1\n" * 10_000)  # 60 KB each, 300 KB in all: three workers' worth
    assert workers.default_jobs(sizes(large)) == 3
    assert workers.default_jobs(sizes(large[:1])) == 1  # one file cannot be shared out


def test_a_finding_the_recipes_of_a_file_share_is_sent_once(tmp_path, monkeypatch):
    """A file's result holds each finding once (the report keeps only the first anyway), so
    workers do not encode and send the copies the other recipes of the file report."""
    shutil.copytree(FIXTURES / "resolve" / "myrecipes", tmp_path / "myrecipes")
    (tmp_path / "myrecipes" / "shared.py").write_text(
        "from .llama.h100 import llama3_8b_sft_config\n\n\n"
        "def _with_cp(cfg):\n"
        "    cfg.model.context_parallel_size = 2\n"
        "    cfg.model.calculate_per_token_loss = False\n\n\n"
        "def first_config():\n"
        "    cfg = llama3_8b_sft_config()\n"
        "    _with_cp(cfg)\n"
        "    return cfg\n\n\n"
        "def second_config():\n"
        "    cfg = llama3_8b_sft_config()\n"
        "    _with_cp(cfg)\n"
        "    return cfg\n")
    monkeypatch.chdir(tmp_path)
    engine = Engine(CheckOptions(jobs=1, world_size=8))
    engine.display_root = tmp_path
    engine.editable = {"myrecipes/shared.py"}
    result, _ = engine.check_file(Path("myrecipes/shared.py"))
    identities = [finding.identity()[:4] for finding in result.findings]
    # the model's config.json is not at hand: CV002 at each recipe's call of the (not linted) recipe holding it
    assert identities == [("CP002", "myrecipes/shared.py", 6, 5), ("CV002", "myrecipes/shared.py", 10, 11),
                          ("PK007", "myrecipes/shared.py", 5, 5), ("CV002", "myrecipes/shared.py", 16, 11)]


def test_a_family_spread_over_sibling_trees_is_one_group(tmp_path, monkeypatch):
    """Performance recipes call their family's base recipes: one worker should parse both."""
    from mblint.workers import _family_groups

    monkeypatch.chdir(tmp_path)
    files = ["recipes/llama/llama3.py", "recipes/llama/h100/llama3.py", "perf_recipes/llama/b200/llama3.py",
             "recipes/qwen/qwen3.py", "perf_recipes/qwen/qwen3.py", "recipes/common.py", "perf_recipes/_common.py"]
    groups = {tuple(sorted(str(p) for p in group)) for group in _family_groups([Path(f) for f in files])}
    assert groups == {
        ("perf_recipes/llama/b200/llama3.py", "recipes/llama/h100/llama3.py", "recipes/llama/llama3.py"),
        ("perf_recipes/qwen/qwen3.py", "recipes/qwen/qwen3.py"),
        ("recipes/common.py",),
        ("perf_recipes/_common.py",),
    }


def test_a_worker_sends_a_result_as_its_cached_form_keeps_it():
    """The transfer pickle (dumps_for_transfer) rebuilds what ``FileResult.from_dict`` of the
    cache's form rebuilds: every field, origins' kinds and sequence numbers, tuples where a rule
    gave lists, no ``via`` (it holds syntax trees), nothing suppressed."""
    import ast
    import pickle

    from mblint.workers import dumps_for_transfer
    from mblint.findings import Finding, FixIntent, Related, Severity, encode
    from mblint.model import Origin
    from mblint.results import FileError, FileResult

    class Call:
        def __init__(self) -> None:
            self.tree = ast.parse("x = 1\n" * 500)

    via = (Call(),)
    location = Origin("a.py", 3, 5, 3, 9, "override", 7, via)
    related = Related(Origin("b.py", 1, 1, 1, 4, "default", 2, via), "set here")
    fixes = (FixIntent("set", "train.x", [1, 2], None, False, "set x", True), FixIntent("remove", "train.y"))
    finding = Finding("CP002", "cp-thing", Severity.ERROR, "message", location, [related], ["train.x"],
                      "a.py::f", list(fixes), extra={"k": [1]})
    result = FileResult([finding], [FileError("a.py", "bad", 2, 3)], ["a note"], 2, 1, True)
    deps = {Path("/x/a.py"), Path("b.py")}

    data = dumps_for_transfer([("a.py", result, deps)])
    (raw, sent, sent_deps), = pickle.loads(data)
    expected = FileResult.from_dict(result.to_dict())

    assert len(data) < 2000, "no syntax tree travels with the origins"
    assert (raw, sent_deps) == ("a.py", deps)
    assert [vars(e) for e in sent.errors] == [vars(e) for e in expected.errors]
    assert (sent.notes, sent.recipes, sent.resolved, sent.directive_free) == (["a note"], 2, 1, True)
    got, want = sent.findings[0], expected.findings[0]
    assert got == want and encode(got) == encode(want)
    assert (type(got.related), type(got.fields), type(got.fixes), got.severity, got.suppressed) == \
        (tuple, tuple, tuple, Severity.ERROR, False)
    assert got.location.via == () and got.related[0].origin.via == ()
    assert (got.location.kind, got.location.seq, got.related[0].origin.kind) == ("override", 7, "default")
    assert got.fixes == fixes and isinstance(got.related[0], Related)


def test_every_field_of_a_finding_part_is_encoded():
    """A field added to Finding, Related, FixIntent or Origin must be added to the one encoding
    (mblint.findings.PARTS, encode, decode), or it is lost in the cache and on the way from a
    worker (Origin's ``via`` stays behind on purpose: it holds syntax trees; so does
    ``through``: a finding names that place as a related location of its own before it leaves;
    a finding leaves unsuppressed)."""
    import dataclasses

    from mblint.findings import PARTS, Finding, FixIntent, Related, Severity, decode, encode
    from mblint.model import Origin

    left_behind = {Origin: ("via", "through"), Finding: ("suppressed",)}
    for cls, parts in PARTS.items():
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name not in left_behind.get(cls, ()))
        assert names == parts, cls.__name__
    origin = Origin("a.py", 2, 3, 4, 5, "override", 6)
    fix = FixIntent("rename", "train.x", 7, "train.y", False, "rename x", True)
    finding = Finding("CP002", "cp-thing", Severity.WARNING, "message", origin, (Related(origin, "set here"),),
                      ("train.x",), "a.py::f", (fix,), extra={"k": 1})
    again = decode(encode(finding))

    def values(value):
        cls = type(value)
        if cls in PARTS:
            return tuple(values(getattr(value, name)) for name in PARTS[cls])
        return tuple(map(values, value)) if cls is tuple else value

    assert values(again) == values(finding)


def test_the_resolver_and_its_schema_are_ready_before_the_workers_start(tmp_path, monkeypatch):
    """Importing the resolver and loading the schema would otherwise be done again in every
    worker."""
    for index in range(4):
        shutil.copytree(FIXTURES / "resolve" / "myrecipes", tmp_path / f"team{index}" / "myrecipes")
    monkeypatch.chdir(tmp_path)
    engine = Engine(CheckOptions(jobs=2))
    engine.display_root = tmp_path
    seen = []
    run_units = workers.run_units

    def watched(work, units, jobs, local_work=None):
        seen.append(engine._project is not None and bool(engine._project._interpreters))
        return run_units(work, units, jobs, local_work)

    monkeypatch.setattr(workers, "run_units", watched)
    report = engine.check_paths(["."])
    assert seen == [True]
    assert report.findings, "the fixture recipes have findings"
