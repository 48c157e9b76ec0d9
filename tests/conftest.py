import gc
import os
import sys
import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from pytest_lsp import ClientServerConfig, LanguageClient

sys.path.insert(0, str(Path(__file__).parent))

from server_support import SERVER, start, workspace_copy  # noqa: E402
from wheels import wheel_root  # noqa: E402

# Hugging Face configs come from an empty hub cache unless a test writes its own: a developer's
# ~/.cache/huggingface must not change what the tests see.
os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp(prefix="mblint-empty-hf-hub-")


def pytest_configure(config):
    """The suite builds and drops many large object graphs (syntax trees, configurations): the
    cyclic garbage collector's rescans of them would triple its time. Reference counting frees
    them; the collector is paused for the session, as the mblint command pauses it for a run."""
    global _GC_WAS_ENABLED
    _GC_WAS_ENABLED = gc.isenabled()
    gc.disable()


def pytest_unconfigure(config):
    if _GC_WAS_ENABLED:
        gc.enable()


_GC_WAS_ENABLED = False


@pytest.fixture(autouse=True, scope="module")
def collect_cycles_after_each_module():
    """With the collector paused, the cycles a test module leaves (interpreters, caches of
    finished runs) would pile up to gigabytes over the suite: freed once per module instead."""
    yield
    gc.collect()


@pytest.fixture(scope="session")
def mb06() -> Path:
    return wheel_root("0.6")


@pytest.fixture(scope="session")
def mb03() -> Path:
    return wheel_root("0.3")


@pytest.fixture(scope="session")
def mb_roots(mb03, mb06) -> dict:
    return {"0.3": mb03, "0.6": mb06}


@pytest.fixture
def root(tmp_path) -> Path:
    """The language server tests' workspace folder: a copy of fixtures/server."""
    return workspace_copy(tmp_path)


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER))
async def client(lsp_client: LanguageClient, root):
    """A pytest-lsp client of ``mblint server``, initialized on ``root``."""
    await start(lsp_client, root)
    yield
    await lsp_client.shutdown_session()
