"""Property-based tests: whatever the input, ``mblint check`` ends with exit code 0 or 1 (2 only
for a malformed ``--set``) and no exception reaches the user.

Generators: recipe modules built from the patterns the resolver supports, override files and
dotlist items, and mutations of the real-style fixtures (dropped tokens, swapped numbers,
truncation, duplicated or swapped lines, stray bytes).

CI runs a few examples per generator. A long campaign::

    MBLINT_FUZZ_EXAMPLES=5000 python -m pytest tests/test_fuzz.py -s -p no:cacheprovider

prints the number of cases each generator ran.
"""

from __future__ import annotations

import atexit
import collections
import json
import os
import re
import shutil
import tempfile
from pathlib import Path

from click.testing import CliRunner
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis import given

from mblint.cli import main

FIXTURES = Path(__file__).parent.parent / "fixtures"
SEED_PROJECT = FIXTURES / "robustness" / "recipes"
EXAMPLES = int(os.environ.get("MBLINT_FUZZ_EXAMPLES", "0"))
settings.register_profile("ci", max_examples=12, deadline=None, derandomize=True, database=None,
                          suppress_health_check=list(HealthCheck))
settings.register_profile("long", max_examples=max(EXAMPLES, 1), deadline=None,
                          suppress_health_check=list(HealthCheck))
settings.load_profile("long" if EXAMPLES else "ci")

CASES: collections.Counter = collections.Counter()
if EXAMPLES:
    atexit.register(lambda: print(f"\nfuzz cases per generator: {dict(CASES)}"))


def lint_tree(files: dict[str, bytes | str], *args: str, generator: str) -> None:
    """Write ``files`` beside the fixture seed project and lint them (text or JSON output)."""
    CASES[generator] += 1
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        shutil.copytree(SEED_PROJECT, root / "recipes")
        for name, content in files.items():
            path = root / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8", "surrogatepass"))
        cwd = os.getcwd()
        os.chdir(root)
        try:
            output = "json" if CASES[generator] % 2 else "text"
            assert_clean_run(CliRunner().invoke(main, ["check", "--no-cache", "--format", output, ".", *args]))
        finally:
            os.chdir(cwd)


def assert_clean_run(result) -> None:
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    if result.exit_code == 2:  # only the errors docs/robustness.md lists for exit code 2
        assert re.search(r"mblint: error: (--set #\d|.*: paired recipe .*not found)", result.stderr), result.stderr
    else:
        assert result.exit_code in (0, 1), result.output
    assert "internal error" not in result.stderr, result.stderr
    assert "Traceback" not in result.output


# ----- recipe modules from the patterns the resolver supports ---------------------------------

FIELDS = ["train.micro_batch_size", "train.global_batch_size", "train.train_iters", "dataset.seq_length",
          "dataset.enable_offline_packing", "dataset.offline_packing_specs.packed_sequence_size",
          "model.tensor_model_parallel_size", "model.context_parallel_size", "model.sequence_parallel",
          "model.pipeline_model_parallel_size", "optimizer.lr", "mixed_precision", "train.manual_gc",
          "dataset.dataset_kwargs", "checkpoint.save_interval", "scheduler.lr_warmup_iters"]
NAMES = ["SEQ", "MBS", "mbs", "n", "x", "tp", "cfg.train.micro_batch_size", "cfg.dataset.seq_length"]

scalars = st.one_of(
    st.integers(-3, 70_000).map(str), st.sampled_from(["True", "False", "None", "1e-4", "0.5", "2**31", "-0"]),
    st.sampled_from(['"bf16_mixed"', '"fp8"', "'x'", '"a" * 3', "10 ** 400", "2 ** 10 ** 6"]),
    st.sampled_from(NAMES),
)


def _extend(inner):
    pair = st.tuples(inner, inner)
    return st.one_of(
        st.tuples(inner, st.sampled_from(["+", "-", "*", "//", "%", "**", "<<", "|", "/"]), inner).map(
            lambda t: f"({t[0]} {t[1]} {t[2]})"),
        pair.map(lambda p: f"min({p[0]}, {p[1]})"), pair.map(lambda p: f"max({p[0]}, {p[1]})"),
        st.tuples(inner, inner, inner).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.lists(inner, max_size=3).map(lambda items: "[" + ", ".join(items) + "]"),
        pair.map(lambda p: f'{{"k": {p[0]}, **{{"j": {p[1]}}}}}'),
        inner.map(lambda e: f'f"v{{{e}}}"'), inner.map(lambda e: f"math.lcm({e}, 8)"),
        inner.map(lambda e: f"[{e} for _ in range(3)]"), inner.map(lambda e: f"-{e}"),
        inner.map(lambda e: f"_helper_value({e})"), inner.map(lambda e: f"not {e}"),
        pair.map(lambda p: f"({p[0]} == {p[1]})"), inner.map(lambda e: f"len(str({e}))"),
        inner.map(lambda e: f"TrainingConfig(micro_batch_size={e})"),
    )


expressions = st.recursive(scalars, _extend, max_leaves=8)


def _statement(body):
    simple = st.one_of(
        st.tuples(st.sampled_from(FIELDS), expressions).map(lambda t: [f"cfg.{t[0]} = {t[1]}"]),
        st.tuples(st.sampled_from(["x", "n", "mbs", "tp"]), expressions).map(lambda t: [f"{t[0]} = {t[1]}"]),
        st.tuples(st.sampled_from(FIELDS), expressions).map(lambda t: [f"cfg.{t[0]} += {t[1]}"]),
        expressions.map(lambda e: [f"x, n = {e}, ({e})"]),
        expressions.map(lambda e: [f"cfg.train.micro_batch_size = cfg.train.global_batch_size = {e}"]),
        st.sampled_from([["_mutate(cfg)"], ["_recurse(cfg, 3)"], ["cfg = other_config()"], ["return cfg"],
                         ["cfg.train = TrainingConfig(global_batch_size=64)"], ["del cfg.dataset_kwargs"],
                         ["cfg.dataset.dataset_kwargs.update({'pad': True})"], ["raise ValueError('no')"],
                         ["unknown_call(cfg)"], ["setattr(cfg.train, 'micro_batch_size', 3)"]]),
    )
    nested = st.one_of(
        st.tuples(expressions, body, body).map(
            lambda t: [f"if {t[0]}:", *[f"    {s}" for s in t[1]], "else:", *[f"    {s}" for s in t[2]]]),
        st.tuples(expressions, body).map(lambda t: [f"for i in range({t[0]}):", *[f"    {s}" for s in t[1]]]),
        body.map(lambda b: ["try:", *[f"    {s}" for s in b], "except Exception:", "    pass"]),
        body.map(lambda b: ["while n:", *[f"    {s}" for s in b], "    break"]),
    )
    return st.one_of(simple, nested)


statements = st.recursive(st.just(["pass"]), lambda body: st.lists(_statement(body), min_size=1, max_size=4).map(
    lambda groups: [line for group in groups for line in group]), max_leaves=12)

MODULE_HEAD = """import math

from megatron.bridge.training.config import ConfigContainer, TrainingConfig

from recipes.common import _sft_common

SEQ = {seq}
MBS = {mbs}


def _helper_value(value=MBS):
    return value * 2


def _mutate(cfg, factor=2):
    cfg.train.global_batch_size = cfg.train.micro_batch_size * factor


def _recurse(cfg, depth):
    if depth:
        _recurse(cfg, depth - 1)
    cfg.train.train_iters = depth


def other_config() -> ConfigContainer:
    cfg = generated_config()
    return cfg
"""


@st.composite
def recipe_modules(draw) -> str:
    head = MODULE_HEAD.format(seq=draw(scalars), mbs=draw(scalars))
    params = draw(st.sampled_from(["", "mbs=2", "mbs=MBS, tp=1", "*args, **kwargs", "n=None"]))
    body = draw(statements)
    lines = [head, "", f"def generated_config({params}) -> ConfigContainer:", "    cfg = _sft_common()"]
    lines += [f"    {line}" for line in body] + ["    return cfg", ""]
    return "\n".join(lines)


@given(recipe_modules())
def test_generated_recipes(module):
    lint_tree({"generated.py": module}, generator="recipes")


# ----- override files and dotlist items ----------------------------------------------------

yaml_scalars = st.one_of(st.integers(-5, 10**6).map(str), st.sampled_from(
    ["true", "false", "null", "~", "???", "1e-4", "'text'", '"q"', "[1, 2]", "{a: 1}", "!!python/name:os.system ''",
     "!!int '3'", "!custom 1", "*anchor", "&anchor 4", "<<: *anchor", ".inf", "0x1F", "2001-12-14", "|\n    block"]))


@st.composite
def override_files(draw) -> str:
    lines = ["# mblint: recipe=../recipes/good.py::good_sft_recipe"]
    sections: dict[str, list[str]] = {}
    for _ in range(draw(st.integers(0, 8))):
        section, _, rest = draw(st.sampled_from(FIELDS + ["train.bogus", "nope.field", "model"])).partition(".")
        sections.setdefault(section, []).append(f"{rest or 'x'}: {draw(yaml_scalars)}")
    for section, entries in sections.items():
        lines.append(f"{section}:" if draw(st.booleans()) else f"{section}: &anchor")
        lines += [f"  {entry}" for entry in entries]
    if draw(st.booleans()):
        lines.insert(draw(st.integers(1, len(lines))), draw(st.text(max_size=20)))
    return "\n".join(lines) + "\n"


dotlist_items = st.one_of(
    st.tuples(st.sampled_from(["", "+", "++", "~"]), st.sampled_from(FIELDS + ["a.b", "train.nope"]),
              st.sampled_from(["=1", "=[1,2]", "={x: 1}", "=null", "='q'", "", "=", "=[1,", '="unterminated']))
    .map("".join),
    st.text(max_size=30),
)


@given(override_files(), st.lists(dotlist_items, max_size=3))
def test_generated_overrides(override, dotlist):
    lint_tree({"conf/override.yaml": override}, *[a for item in dotlist for a in ("--set", item)],
              generator="overrides")


# ----- mutations of the real-style fixtures ----------------------------------------------------

MUTABLE = sorted([p for p in (FIXTURES / "resolve").rglob("*") if p.suffix in (".py", ".yaml")] +
                 [p for p in (FIXTURES / "robustness").rglob("*") if p.suffix in (".py", ".yaml")
                  and "hostile" not in p.parts and p.name != "billion_laughs.yaml"] +
                 [p for p in (FIXTURES / "fixes").rglob("before/*") if p.suffix in (".py", ".yaml")])
TOKEN = re.compile(r"\w+|[^\w\s]")
NUMBER = re.compile(r"\b\d+\b")
PAIRING = re.compile(r"# mblint: recipe=\S+")


@st.composite
def mutated_files(draw) -> tuple[str, bytes]:
    source = draw(st.sampled_from(MUTABLE))
    text = PAIRING.sub("# mblint: recipe=../recipes/good.py::good_sft_recipe", source.read_text())
    for _ in range(draw(st.integers(1, 3))):
        text = draw(st.sampled_from(MUTATIONS))(draw, text)
    name = source.name if source.suffix == ".py" else "conf/" + source.name
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 9)) == 0:
        spot = draw(st.integers(0, len(data)))
        data = data[:spot] + draw(st.binary(min_size=1, max_size=4)) + data[spot:]
    return f"recipes/{name}" if source.suffix == ".py" else name, data


def _drop_token(draw, text):
    tokens = list(TOKEN.finditer(text))
    if not tokens:
        return text
    match = draw(st.sampled_from(tokens))
    return text[:match.start()] + text[match.end():]


def _swap_number(draw, text):
    numbers = list(NUMBER.finditer(text))
    if not numbers:
        return text
    match = draw(st.sampled_from(numbers))
    new = draw(st.sampled_from(["0", "1", "3", "-1", "7", "4096", "10**9", "2**64", "0.5", "None"]))
    return text[:match.start()] + new + text[match.end():]


def _truncate(draw, text):
    return text[:draw(st.integers(0, len(text)))]


def _duplicate_line(draw, text):
    lines = text.splitlines(keepends=True)
    if not lines:
        return text
    index = draw(st.integers(0, len(lines) - 1))
    return "".join(lines[:index + 1] + [lines[index]] + lines[index + 1:])


def _swap_lines(draw, text):
    lines = text.splitlines(keepends=True)
    if len(lines) < 2:
        return text
    first, second = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
    lines[first], lines[second] = lines[second], lines[first]
    return "".join(lines)


def _insert_text(draw, text):
    spot = draw(st.integers(0, len(text)))
    snippet = draw(st.one_of(st.sampled_from(["(", ")", ":", "\t", "\r", "\n    ", "# mblint: ignore[", "**",
                                              "lambda: ", "*", "\x00", "\ufeff", "&a ", "*a", "!!python/none "]),
                             st.text(max_size=5)))
    return text[:spot] + snippet + text[spot:]


MUTATIONS = [_drop_token, _swap_number, _truncate, _duplicate_line, _swap_lines, _insert_text]


@given(st.lists(mutated_files(), min_size=1, max_size=3))
def test_mutated_fixtures(files):
    lint_tree(dict(files), generator="mutations")


def test_generators_produce_lintable_code():
    """The generators are not vacuous: a plain generated recipe resolves to a configuration."""
    module = MODULE_HEAD.format(seq=2048, mbs=2) + "\n\ndef generated_config() -> ConfigContainer:\n" \
        "    cfg = _sft_common()\n    cfg.train.micro_batch_size = MBS\n    return cfg\n"
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        shutil.copytree(SEED_PROJECT, root / "recipes")
        (root / "generated.py").write_text(module)
        cwd = os.getcwd()
        os.chdir(root)
        try:
            result = CliRunner().invoke(main, ["check", "--no-cache", "--format", "json", "generated.py"])
        finally:
            os.chdir(cwd)
    findings = json.loads(result.stdout)["findings"]
    assert [(f["rule"], f["location"]["line"]) for f in findings] == [("PK001", module.splitlines().index(
        "    cfg.train.micro_batch_size = MBS") + 1)]
