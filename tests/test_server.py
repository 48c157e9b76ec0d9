"""``mblint server`` driven over stdio by a real LSP client (pytest-lsp): diagnostics on open,
change (the unsaved buffer) and save, for recipes and override files, with related locations;
a change to a shared base builder re-checks the open recipes built on it."""

from __future__ import annotations

import pytest
import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient
from server_support import SERVER, Documents, codes, start, workspace_copy

pytestmark = pytest.mark.asyncio


@pytest.fixture
def root(tmp_path):
    return workspace_copy(tmp_path)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, root):
    await start(lsp_client, root)
    yield
    await lsp_client.shutdown_session()


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
