#!/usr/bin/env python
"""Generate ``mblint/schema/data/`` from the released wheels: one schema per Megatron-Bridge
release on the package index, with the Megatron-Core release it pins.

Downloads megatron-bridge and megatron-core wheels with ``pip download --no-deps`` into a cache
directory, unzips them, and reads their sources with ``ast`` only (nothing is imported).
Releases whose schemas come out identical share one data file.

    python scripts/generate_schema.py [--cache DIR] [--release 0.6.2 ...] [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import subprocess
import sys
import zipfile
from pathlib import Path

from mblint.schema.build import build_schema, dump
from mblint.schema.extract import SourceIndex

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "mblint" / "schema" / "data"
OVERLAY = Path(__file__).resolve().parent / "schema_overlay.json"
# The Megatron-Core each release pins: the release named by megatron/core/package_info.py at the
# commit of the 3rdparty/Megatron-LM submodule in the release's tag (v0.4.0 and v0.4.1 pin
# 0.17.0rc0, taken as 0.17.0; the v0.6.2 tag has no submodule: the latest 0.19 patch release).
RELEASES = {
    "0.3.0": "0.16.0", "0.3.1": "0.16.1",
    "0.4.0": "0.17.0", "0.4.1": "0.17.0", "0.4.2": "0.17.1",
    "0.5.0": "0.18.0", "0.5.1": "0.18.2",
    "0.6.0": "0.19.0", "0.6.2": "0.19.2",
}
RECIPE_FOLDERS = ("recipes", "perf_recipes")


def download_wheel(project: str, version: str, cache: Path) -> Path:
    wheels = cache / "wheels"
    found = _find_wheel(wheels, project, version)
    if found:
        return found
    wheels.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable, "-m", "pip", "download", "--no-deps", "--python-version", "3.12",
        "--only-binary=:all:", "--dest", str(wheels), f"{project}=={version}",
    ]
    subprocess.run(command, check=True)
    found = _find_wheel(wheels, project, version)
    if not found:
        raise FileNotFoundError(f"pip did not leave a wheel for {project}=={version} in {wheels}")
    return found


def _find_wheel(wheels: Path, project: str, version: str) -> Path | None:
    stem = project.replace("-", "_")
    matches = sorted(wheels.glob(f"{stem}-{version}-*.whl")) if wheels.is_dir() else []
    return matches[0] if matches else None


def unpack_wheel(wheel: Path, cache: Path) -> Path:
    target = cache / "src" / wheel.name.split("-")[0] / wheel.name.split("-")[1]
    marker = target / ".unpacked"
    if not marker.exists():
        with zipfile.ZipFile(wheel) as archive:
            members = [n for n in archive.namelist() if n.endswith(".py")]
            archive.extractall(target, members)
        marker.write_text(wheel.name)
    return target


def recipe_texts(bridge_root: Path):
    for folder in RECIPE_FOLDERS:
        for path in sorted((bridge_root / "megatron" / "bridge" / folder).rglob("*.py")):
            yield path.read_bytes()


def release_schema(version: str, cache: Path, replacements: dict) -> dict:
    bridge = unpack_wheel(download_wheel("megatron-bridge", version, cache), cache)
    core = unpack_wheel(download_wheel("megatron-core", RELEASES[version], cache), cache)
    index = SourceIndex.from_dirs([bridge, core])
    return build_schema(index, version, RELEASES[version], recipe_texts(bridge), replacements)


def removed_fields(older: dict, newer: dict) -> dict[str, str]:
    """ConfigContainer paths (``section.field``) of ``older`` that ``newer`` no longer has."""
    before, after = _container_paths(older), _container_paths(newer)
    return {path: older["megatron_bridge_version"] for path in sorted(before - after)}


def _container_paths(schema: dict) -> set[str]:
    classes = schema["classes"]

    def fields(qualname: str) -> dict:
        cls = classes.get(qualname, {})
        base = cls.get("fields_from")
        return {**(fields(base) if base and base != qualname else {}), **cls.get("fields", {})}

    paths = set()
    for section, spec in fields(schema["root"]).items():
        for qualname in spec.get("classes", ()):
            paths.update(f"{section}.{name}" for name in fields(qualname))
    return paths


def write_releases(schemas: dict[str, dict], out_dir: Path) -> None:
    """``releases.json`` (release -> data file, Megatron-Core version) and one gzipped file per
    distinct schema, named by its content."""
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in out_dir.glob("mb-*.json.gz"):
        old.unlink()
    index = {}
    for version, schema in schemas.items():
        body = {k: v for k, v in schema.items() if k not in ("megatron_bridge_version", "megatron_core_version")}
        text = dump(body).encode()
        name = f"mb-{hashlib.sha256(text).hexdigest()[:12]}.json.gz"
        path = out_dir / name
        if not path.exists():
            path.write_bytes(gzip.compress(text, compresslevel=9, mtime=0))
        index[version] = {"file": name, "megatron_core_version": schema["megatron_core_version"]}
    (out_dir / "releases.json").write_text(json.dumps({"format": 2, "releases": index}, indent=1) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("~/.cache/mblint-schema").expanduser())
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    replacements = json.loads(OVERLAY.read_text(encoding="utf-8"))["replacements"]
    schemas: dict[str, dict] = {}
    previous = None
    for version in RELEASES:
        schema = release_schema(version, args.cache.expanduser(), replacements)
        schema["removed_fields"] = {}
        if previous:
            present = _container_paths(schema)
            kept = {path: last for path, last in previous["removed_fields"].items() if path not in present}
            schema["removed_fields"] = {**kept, **removed_fields(previous, schema)}
        schemas[version] = previous = schema
        print(f"{version}: {len(schema['classes'])} classes", flush=True)
    write_releases(schemas, args.out_dir)
    for old in args.out_dir.glob("megatron-bridge-*.json"):
        old.unlink()
    print(f"wrote {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
