import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from wheels import wheel_root  # noqa: E402

# Hugging Face configs come from an empty hub cache unless a test writes its own: a developer's
# ~/.cache/huggingface must not change what the tests see.
os.environ["HF_HUB_CACHE"] = tempfile.mkdtemp(prefix="mblint-empty-hf-hub-")


@pytest.fixture(scope="session")
def mb06() -> Path:
    return wheel_root("0.6")


@pytest.fixture(scope="session")
def mb03() -> Path:
    return wheel_root("0.3")


@pytest.fixture(scope="session")
def mb_roots(mb03, mb06) -> dict:
    return {"0.3": mb03, "0.6": mb06}
