import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from wheels import wheel_root  # noqa: E402


@pytest.fixture(scope="session")
def mb06() -> Path:
    return wheel_root("0.6")


@pytest.fixture(scope="session")
def mb03() -> Path:
    return wheel_root("0.3")


@pytest.fixture(scope="session")
def mb_roots(mb03, mb06) -> dict:
    return {"0.3": mb03, "0.6": mb06}
