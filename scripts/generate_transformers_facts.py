#!/usr/bin/env python
"""Generate ``mblint/schema/data/transformers.json`` and its ``tf-*.json.gz`` files: what the
transformers configuration classes default to, per bundled Megatron-Bridge release, read from
the transformers wheels that release allows (its wheel's ``Requires-Dist: transformers``):
the newest release the pin allows (what ``pip install megatron-bridge==X`` installs) and the
pin's lower bound where it has one; a default is kept only where they agree.

Wheels come from the package index with ``pip download --no-deps``; the sources are read with
``ast`` only (nothing is imported). Releases whose facts come out identical share one file.

    python scripts/generate_transformers_facts.py [--cache DIR] [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate_schema import OUT_DIR, RELEASES, download_wheel  # noqa: E402

from mblint.schema.transformers import INDEX_FILE, dump_facts, merge_facts, read_config_facts  # noqa: E402

PIN = re.compile(r"^Requires-Dist: transformers\s*([^;\s]*)", re.M)
LOWER_BOUND = re.compile(r">=\s*([0-9][0-9.]*)")


def transformers_pin(bridge_wheel: Path) -> str:
    """The version specifier of ``transformers`` in the wheel's METADATA ("" when unpinned)."""
    with zipfile.ZipFile(bridge_wheel) as archive:
        name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        match = PIN.search(archive.read(name).decode("utf-8", "replace"))
    if match is None:
        raise ValueError(f"{bridge_wheel.name} does not require transformers")
    return match.group(1).strip("()")


def wheels_for(pin: str, cache: Path) -> list[Path]:
    """The newest transformers wheel ``pin`` allows, and the one of its lower bound."""
    specs = [f"transformers{pin}"]
    lower = LOWER_BOUND.search(pin)
    if lower:
        specs.append(f"transformers=={lower.group(1)}")
    found = []
    for spec in specs:
        folder = cache / "transformers" / spec.translate(str.maketrans({"<": "lt", ">": "gt", "=": "eq", ",": "_"}))
        wheels = sorted(folder.glob("transformers-*.whl")) if folder.is_dir() else []
        if not wheels:
            folder.mkdir(parents=True, exist_ok=True)
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                            "--dest", str(folder), spec], check=True)
            wheels = sorted(folder.glob("transformers-*.whl"))
        found.append(wheels[-1])
    return list(dict.fromkeys(found))


def unpack_configurations(wheel: Path, cache: Path) -> Path:
    """The wheel's Python modules, unpacked (a configuration class's bases may live in any)."""
    target = cache / "src" / "transformers" / wheel.name.split("-")[1]
    marker = target / ".unpacked"
    if not marker.exists():
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if n.startswith("transformers/") and n.endswith(".py")]
            archive.extractall(target, members)
        marker.write_text(wheel.name)
    return target


def version_of(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("~/.cache/mblint-schema").expanduser())
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    cache = args.cache.expanduser()
    read: dict[str, dict] = {}
    index: dict[str, str] = {}
    files: dict[str, bytes] = {}
    for release in RELEASES:
        pin = transformers_pin(download_wheel("megatron-bridge", release, cache))
        wheels = wheels_for(pin, cache)
        versions = sorted({version_of(w) for w in wheels}, key=lambda v: tuple(int(p) for p in v.split(".")))
        for wheel in wheels:
            if version_of(wheel) not in read:
                read[version_of(wheel)] = read_config_facts(unpack_configurations(wheel, cache))
        body = dump_facts(merge_facts([read[v] for v in versions]), versions)
        name = f"tf-{hashlib.sha256(body).hexdigest()[:12]}.json.gz"
        files[name] = body
        index[release] = name
        print(f"{release}: transformers{pin} -> {', '.join(versions)}", flush=True)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for old in args.out_dir.glob("tf-*.json.gz"):
        if old.name not in files:
            old.unlink()
    for name, body in files.items():
        (args.out_dir / name).write_bytes(gzip.compress(body, compresslevel=9, mtime=0))
    (args.out_dir / INDEX_FILE).write_text(json.dumps({"format": 1, "releases": index}, indent=1) + "\n")
    print(f"wrote {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
