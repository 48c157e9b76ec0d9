"""``mblint server`` driven over stdio by a real LSP client (pytest-lsp): diagnostics on open,
change (the unsaved buffer) and save, for recipes and override files, with related locations;
a change to a shared base builder re-checks the open recipes built on it."""

from __future__ import annotations

import asyncio
import shutil
import sys

import pytest
import pytest_asyncio
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, make_test_lsp_client
from server_support import REPO, SERVER, Documents, apply_edits, code_actions, codes, start

pytestmark = pytest.mark.asyncio


async def test_diagnostics_on_open_change_and_save(client: LanguageClient, root):
    docs = Documents(client, root)
    uri = docs.open("recipes/sft.py")
    [pk001] = await docs.diagnostics(uri)
    assert (pk001.code, pk001.source, pk001.severity) == ("PK001", "mblint", types.DiagnosticSeverity.Error)
    # recipes/sft.py:8 `cfg.train.micro_batch_size = 2`, columns 5 to 35 (0-based 4 to 34)
    assert (pk001.range.start.line, pk001.range.start.character, pk001.range.end.character) == (7, 4, 34)
    assert pk001.message.startswith("train.micro_batch_size is 2, but offline sequence packing requires 1")
    [related] = pk001.related_information
    assert related.location.uri == docs.uri("recipes/base.py") and related.location.range.start.line == 10
    assert related.message == "dataset.enable_offline_packing = True is set here"

    text = (root / "recipes" / "sft.py").read_text()
    docs.change(uri, text.replace("micro_batch_size = 2", "micro_batch_size = 1"))  # unsaved: the buffer counts
    assert await docs.diagnostics(uri) == []
    docs.change(uri, "\n\n" + text)  # two lines added above: the finding moves with them
    assert codes(await docs.diagnostics(uri)) == [("PK001", 10)]
    docs.save(uri)
    assert codes(await docs.diagnostics(uri)) == [("PK001", 10)]


async def test_an_override_file_is_checked_with_its_recipe(client: LanguageClient, root):
    docs = Documents(client, root)
    uri = docs.open("conf/sft.yaml", language="yaml")
    assert await docs.diagnostics(uri) == []  # the recipe's own PK001 is at the recipe's line
    text = (root / "conf" / "sft.yaml").read_text()
    docs.change(uri, text.replace("global_batch_size: 16", "global_batch_size: 16\n  micro_batch_size: 4"))
    [pk001] = await docs.diagnostics(uri)
    assert (pk001.code, pk001.range.start.line) == ("PK001", 3)  # the YAML key that sets it
    assert pk001.message.startswith("train.micro_batch_size is 4")


async def test_a_change_to_a_shared_base_builder_rechecks_the_recipes_using_it(client: LanguageClient, root):
    docs = Documents(client, root)
    recipe = docs.open("recipes/sft.py")
    assert codes(await docs.diagnostics(recipe)) == [("PK001", 8)]
    graphs = docs.open("recipes/graphs.py")
    assert codes(await docs.diagnostics(graphs)) == [("CG003", 10)]
    base = docs.open("recipes/base.py")
    assert await docs.diagnostics(base) == []
    client.diagnostics.pop(recipe, None)
    client.diagnostics.pop(graphs, None)
    text = (root / "recipes" / "base.py").read_text()
    unpacked = text.replace("enable_offline_packing=True", "enable_offline_packing=False").replace(
        "            offline_packing_specs=PackedSequenceSpecs(packed_sequence_size=2048),\n", "")
    docs.change(base, unpacked)  # not saved
    assert await docs.diagnostics(base) == []
    assert await docs.diagnostics(recipe) == []  # checked again, with the unsaved base builder
    assert graphs not in client.diagnostics  # graphs.py does not use it: not checked again


async def test_closing_an_unsaved_base_builder_rechecks_the_recipes_that_read_its_text(
        client: LanguageClient, root):
    docs = Documents(client, root)
    recipe = docs.open("recipes/sft.py")
    assert codes(await docs.diagnostics(recipe)) == [("PK001", 8)]
    base = docs.open("recipes/base.py")
    await docs.diagnostics(base)
    text = (root / "recipes" / "base.py").read_text()
    docs.change(base, text.replace("enable_offline_packing=True", "enable_offline_packing=False").replace(
        "            offline_packing_specs=PackedSequenceSpecs(packed_sequence_size=2048),\n", ""))
    assert await docs.diagnostics(recipe) == []  # checked with the unsaved base builder
    client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=base)))  # the edit is thrown away
    assert codes(await docs.diagnostics(recipe)) == [("PK001", 8)]  # the file on disk counts again


async def test_code_actions_fix_safely_label_unsafe_fixes_and_write_the_suppression(client: LanguageClient, root):
    docs = Documents(client, root)
    uri = docs.open("recipes/graphs.py")
    [cg003] = await docs.diagnostics(uri)
    actions = await code_actions(client, uri, cg003)
    assert [(a.title, a.kind, a.is_preferred) for a in actions] == [
        ("Fix CG003: set model.use_te_rng_tracker to True", "quickfix", True),
        ("Ignore CG003 on this line", "quickfix", None),
        ("mblint: fix all safely fixable findings", "source.fixAll.mblint", None)]
    text = (root / "recipes" / "graphs.py").read_text()
    fixed = apply_edits(text, (await client.code_action_resolve_async(actions[0])).edit.changes[uri])
    # what `mblint check --fix` writes (tests/test_stdin.py: the same recipe, the same line)
    assert fixed == text.replace("    return cfg\n", "    cfg.model.use_te_rng_tracker = True\n    return cfg\n")
    assert fixed == apply_edits(text, (await client.code_action_resolve_async(actions[2])).edit.changes[uri])
    ignored = apply_edits(text, actions[1].edit.changes[uri])
    assert ignored.splitlines()[9] == '    cfg.model.cuda_graph_impl = "transformer_engine"  # mblint: ignore[CG003]'
    docs.change(uri, ignored)
    assert await docs.diagnostics(uri) == []  # the suppression holds
    docs.change(uri, fixed)
    assert await docs.diagnostics(uri) == []

    typo = (root / "recipes" / "sft.py").read_text().replace(
        "cfg.train.micro_batch_size = 2", "cfg.train.global_batch_sise = 16")
    new = docs.open("recipes/typo.py", typo)  # a file not saved yet
    [ot001] = await docs.diagnostics(new)
    [unsafe, _] = await code_actions(client, new, ot001)
    assert (unsafe.title, unsafe.is_preferred) == (
        "Fix OT001: rename train.global_batch_sise to train.global_batch_size (unsafe fix)", None)
    renamed = apply_edits(typo, (await client.code_action_resolve_async(unsafe)).edit.changes[new])
    assert renamed == typo.replace("global_batch_sise", "global_batch_size")

    # PK001's unsafe fix (micro_batch_size = 1 alone, as `check --fix --unsafe-fixes` applies it)
    recipe = docs.open("recipes/sft.py")
    [pk001] = await docs.diagnostics(recipe)
    [unsafe, _] = await code_actions(client, recipe, pk001)
    assert (unsafe.title, unsafe.is_preferred) == ("Fix PK001: set micro_batch_size to 1 (unsafe fix)", None)
    text = (root / "recipes" / "sft.py").read_text()
    fixed = apply_edits(text, (await client.code_action_resolve_async(unsafe)).edit.changes[recipe])
    assert fixed == text.replace("micro_batch_size = 2", "micro_batch_size = 1")
    # a fix asked for a text the document no longer holds is not made; the client is told
    docs.change(recipe, "\n" + text)
    assert (await client.code_action_resolve_async(unsafe)).edit is None
    assert client.messages[-1].message == "mblint: the document changed; ask for the fix again"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def plain_client(lsp_client: LanguageClient, root):
    await start(lsp_client, root, "emacs")  # eglot: no codeAction/resolve, no diagnostic data sent back
    yield
    await lsp_client.shutdown_session()


async def test_a_client_without_resolve_gets_the_edits_at_once(plain_client: LanguageClient, root):
    docs = Documents(plain_client, root)
    uri = docs.open("recipes/graphs.py")
    [cg003] = await docs.diagnostics(uri)
    cg003.data = None  # found again by rule and line
    fix, ignore = await code_actions(plain_client, uri, cg003, only=[types.CodeActionKind.QuickFix])
    text = (root / "recipes" / "graphs.py").read_text()
    assert apply_edits(text, fix.edit.changes[uri]) == text.replace(
        "    return cfg\n", "    cfg.model.use_te_rng_tracker = True\n    return cfg\n")
    assert ignore.title == "Ignore CG003 on this line"


async def hover_at(client: LanguageClient, uri: str, line: int, character: int):
    return await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(line=line - 1, character=character)))


async def test_hover_gives_the_value_in_each_job_and_every_place_that_set_it(client: LanguageClient, root):
    docs = Documents(client, root)
    recipe = docs.open("recipes/sft.py")
    await docs.diagnostics(recipe)
    # `cfg.train.micro_batch_size = 2`: the base builder's keyword set 1 first (recipes/base.py:8,
    # TrainingConfig(micro_batch_size=1, ...)), the recipe's assignment last
    hover = await hover_at(client, recipe, 8, 14)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value == (
        "**`train.micro_batch_size`** in 1 job\n\n"
        "`2` in `recipes/sft.py::sft_config`, set at, in order:\n"
        "1. `recipes/base.py:8:30 (set)`\n"
        "2. `recipes/sft.py:8:5 (set)`")
    assert await hover_at(client, recipe, 6, 2) is None  # `def sft_config()`: no field set there

    override = docs.open("conf/sft.yaml", language="yaml")
    await docs.diagnostics(override)
    hover = await hover_at(client, override, 3, 4)  # `global_batch_size: 16`
    assert hover.contents.value == (
        "**`train.global_batch_size`** in 1 job\n\n"
        "`16` in `the job of recipes/sft.py::sft_config with the override file conf/sft.yaml`, set at, in order:\n"
        "1. `recipes/base.py:8:50 (set)`\n"
        "2. `conf/sft.yaml:3:3 (override)`")

    # In the base builder, the keyword of a config class: every open job that reaches it
    base = docs.open("recipes/base.py")
    await docs.diagnostics(base)
    value = (await hover_at(client, base, 8, 60)).contents.value  # global_batch_size=8
    assert value.startswith("**`train.global_batch_size`** in 3 jobs\n\n`8` in `recipes/base.py::packed_base`, "
                            "`recipes/sft.py::sft_config`, set at, in order:\n1. `recipes/base.py:8:50 (set)`\n\n")
    assert value.endswith("`16` in `the job of recipes/sft.py::sft_config with the override file conf/sft.yaml`, "
                          "set at, in order:\n1. `recipes/base.py:8:50 (set)`\n2. `conf/sft.yaml:3:3 (override)`")


SLOW = [sys.executable, str(REPO / "tests" / "server_patched_rule.py"), "slow", "--debounce", "0.05"]


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SLOW))
async def slow_client(lsp_client: LanguageClient, root):
    await start(lsp_client, root)
    yield
    await lsp_client.shutdown_session()


def record_publications(client: LanguageClient) -> tuple[list, asyncio.Task]:
    """(file name, version) of each diagnostics notification from now on, and the task that
    records them (cancel it when done)."""
    published: list = []

    async def collect():
        while True:
            params = await client.wait_for_notification(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
            published.append((params.uri.rsplit("/", 1)[-1], params.version))

    return published, asyncio.create_task(collect())


async def test_a_newer_edit_supersedes_the_check_in_progress(slow_client: LanguageClient, root):
    """Each check of graphs.py takes over half a second (its CG003 sleeps); an edit made
    meanwhile makes the running check's result stale: it is not published, only the newest is."""
    published, collecting = record_publications(slow_client)
    docs = Documents(slow_client, root)
    uri = docs.open("recipes/graphs.py")
    await docs.diagnostics(uri)
    text = (root / "recipes" / "graphs.py").read_text()
    docs.change(uri, text + "\n")  # version 2: checked from 0.05 s on, for at least 0.5 s
    await asyncio.sleep(0.25)
    for number in range(3):  # versions 3, 4, 5 within the debounce: only 5 is checked
        docs.change(uri, text + "\n" * (number + 2))
        await asyncio.sleep(0.01)
    await docs.diagnostics(uri)
    await asyncio.sleep(1.0)  # a stale result would have come by now
    collecting.cancel()
    assert published == [("graphs.py", 1), ("graphs.py", 5)]


DEPENDANT = """from megatron.bridge.models import GPTModelProvider

from recipes.base import packed_base


def {name}_config():
    cfg = packed_base()
    cfg.model = GPTModelProvider(num_layers=2, hidden_size=64, num_attention_heads=4)
    cfg.model.cuda_graph_impl = "transformer_engine"
    return cfg
"""


async def test_a_newer_edit_of_a_base_builder_goes_before_the_rechecks_of_its_older_text(
        slow_client: LanguageClient, root):
    """Two open recipes build on base.py, each checked in over half a second (their CG003
    sleeps). An edit of base.py queues both again; a newer edit of base.py made while the first
    of them runs is checked next, and the other's re-check of the outdated base.py is dropped:
    each recipe is checked again once, after the newest base.py."""
    for name in ("first", "second"):
        (root / "recipes" / f"{name}.py").write_text(DEPENDANT.format(name=name))
    docs = Documents(slow_client, root)
    base = docs.open("recipes/base.py")
    first, second = docs.open("recipes/first.py"), docs.open("recipes/second.py")
    for uri in (base, first, second):
        await docs.diagnostics(uri)
    published, collecting = record_publications(slow_client)
    text = (root / "recipes" / "base.py").read_text()
    docs.change(base, text.replace("global_batch_size=8", "global_batch_size=16"))  # version 2
    await docs.diagnostics(base)
    await asyncio.sleep(0.1)  # the first recipe's re-check runs
    docs.change(base, text.replace("global_batch_size=8", "global_batch_size=32"))  # version 3
    await docs.diagnostics(base)
    await asyncio.sleep(1.5)  # both re-checks after version 3 take a second, at least
    collecting.cancel()
    assert published[0] == ("base.py", 2)
    rechecks = published[1:]
    assert sorted(rechecks[:1]) in ([("first.py", 1)], [("second.py", 1)])  # the one running at version 3
    assert rechecks[1] == ("base.py", 3)
    assert sorted(rechecks[2:]) == [("first.py", 1), ("second.py", 1)]


async def test_closing_an_unsaved_base_builder_while_its_reader_is_checked_checks_it_again(
        slow_client: LanguageClient, root):
    """A recipe checked first with base.py on disk, then again (for over half a second: its
    CG003 sleeps) after an unsaved edit of base.py; base.py closed meanwhile: that check read a
    text thrown away, and the recipe is checked again with base.py on disk."""
    (root / "recipes" / "first.py").write_text(
        DEPENDANT.format(name="first").replace("    return cfg", "    cfg.train.micro_batch_size = 2\n    return cfg"))
    docs = Documents(slow_client, root)
    first = docs.open("recipes/first.py")
    on_disk = codes(await docs.diagnostics(first))
    assert ("PK001", 10) in on_disk  # base.py packs: micro_batch_size 2 is refused
    base = docs.open("recipes/base.py")
    await docs.diagnostics(base)
    text = (root / "recipes" / "base.py").read_text()
    docs.change(base, text.replace("enable_offline_packing=True", "enable_offline_packing=False").replace(
        "            offline_packing_specs=PackedSequenceSpecs(packed_sequence_size=2048),\n", ""))
    await docs.diagnostics(base)
    await asyncio.sleep(0.1)  # the recipe's re-check with the unsaved base.py runs
    slow_client.text_document_did_close(types.DidCloseTextDocumentParams(
        text_document=types.TextDocumentIdentifier(uri=base)))
    await asyncio.sleep(2.0)  # the re-check in progress, and one after it, are done
    assert codes(slow_client.diagnostics[first]) == on_disk  # the last published: none read the closed text


async def test_the_newest_edit_is_checked_first(slow_client: LanguageClient, root):
    """Two documents edited while a check runs: the one edited last, where the user types, is
    checked first."""
    docs = Documents(slow_client, root)
    graphs, sft, override = docs.open("recipes/graphs.py"), docs.open("recipes/sft.py"), docs.open(
        "conf/sft.yaml", language="yaml")
    for uri in (graphs, sft, override):
        await docs.diagnostics(uri)
    published, collecting = record_publications(slow_client)
    docs.change(graphs, (root / "recipes" / "graphs.py").read_text() + "\n")  # checked for over 0.5 s
    await asyncio.sleep(0.15)
    docs.change(sft, (root / "recipes" / "sft.py").read_text() + "\n")
    await asyncio.sleep(0.1)
    docs.change(override, (root / "conf" / "sft.yaml").read_text() + "\n")
    for uri in (graphs, sft, override):
        await docs.diagnostics(uri)
    collecting.cancel()
    assert published == [("graphs.py", 2), ("sft.yaml", 2), ("sft.py", 2)]


@pytest_asyncio.fixture
async def launch_client(root, mb06):
    """A server given the Megatron-Bridge 0.6.2 wheel as search path, as a user gives their
    installed or vendored Megatron-Bridge; the workspace holds a launch script."""
    (root / "launch").mkdir()
    shutil.copy(REPO / "fixtures" / "launch" / "world_gbs.sh", root / "launch" / "world_gbs.sh")
    client = make_test_lsp_client()
    await client.start_io(*SERVER, "--search-path", str(mb06))
    await start(client, root)
    yield client
    await client.shutdown_session()
    await client.stop()


async def test_a_launch_script_gets_its_job_diagnostics_and_hover_on_key_value(launch_client, root):
    docs = Documents(launch_client, root)
    uri = docs.open("launch/world_gbs.sh", language="shellscript")
    # tests/test_launch.py: world 2 x 8 = 16, -tp 2, DP 8: -gb 100 is no multiple of MBS 1 * 8
    # (PB003 on `-gb 100`, line 5 column 78); the recipe's own PR010 lands on the launch line
    assert [c for c in codes(await docs.diagnostics(uri)) if c[0] != "CV002"] == [("PR010", 5), ("PB003", 5)]
    hover = await hover_at(launch_client, uri, 5, 95)  # model.sequence_parallel=true
    job = "the job launched at launch/world_gbs.sh:5 (llama32_1b_pretrain_1gpu_h100_bf16_config)"
    lines = hover.contents.value.splitlines()
    assert lines[:3] == ["**`model.sequence_parallel`** in 1 job", "", f"`True` in `{job}`, set at, in order:"]
    assert lines[-1] == "3. `launch/world_gbs.sh:5:86 (override)`"
    assert lines[-2].endswith("megatron/bridge/recipes/llama/h100/llama3.py:71:5 (set)`")


async def test_a_base_builder_changed_on_disk_rechecks_the_recipes_using_it(client: LanguageClient, root):
    """A file no editor holds open (a `git checkout`): the client reports it through the file
    watching the server registers, and the open recipe that read it is checked again."""
    docs = Documents(client, root)
    recipe = docs.open("recipes/sft.py")
    assert codes(await docs.diagnostics(recipe)) == [("PK001", 8)]
    assert [r.method for r in client.registrations] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]  # asked for
    base = root / "recipes" / "base.py"
    base.write_text(base.read_text().replace("enable_offline_packing=True", "enable_offline_packing=False").replace(
        "            offline_packing_specs=PackedSequenceSpecs(packed_sequence_size=2048),\n", ""))
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=base.as_uri(), type=types.FileChangeType.Changed)]))
    assert await docs.diagnostics(recipe) == []
