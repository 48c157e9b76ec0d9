"""Megatron-Bridge wheels from PyPI, downloaded at test time and unpacked once (never
installed, never imported: the tests only read them)."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

# Every Megatron-Bridge release on the package index; "0.3" and "0.6" name the newest of their line.
ALL_RELEASES = ("0.3.0", "0.3.1", "0.4.0", "0.4.1", "0.4.2", "0.5.0", "0.5.1", "0.6.0", "0.6.2")
RELEASES = {"0.3": "0.3.1", "0.6": "0.6.2", **{version: version for version in ALL_RELEASES}}
CACHE = Path(os.environ.get("MBLINT_TEST_CACHE", Path.home() / ".cache" / "mblint-tests"))


def wheel_root(line: str) -> Path:
    """A folder holding ``megatron/bridge/...`` of the release ``line`` names (0.3, 0.6 or a
    release such as 0.5.1)."""
    version = RELEASES[line]
    target = CACHE / f"megatron-bridge-{version}"
    done = target / ".complete"
    if done.exists():
        return target
    wheel = _download(version)
    target.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for name in archive.namelist():
            if name.startswith("megatron/bridge/") and name.endswith(".py"):
                archive.extract(name, target)
    done.write_text(version)
    return target


def _download(version: str) -> Path:
    folder = CACHE / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    existing = sorted(folder.glob(f"megatron_bridge-{version}-*.whl"))
    if existing:
        return existing[0]
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--python-version", "3.12", "-d", str(folder), f"megatron-bridge=={version}"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return sorted(folder.glob(f"megatron_bridge-{version}-*.whl"))[0]
