#!/usr/bin/env python
"""Generate ``mblint/schema/data/megatron-bridge-<line>.json`` from the released wheels.

Downloads megatron-bridge and megatron-core wheels with ``pip download --no-deps`` into a cache
directory, unzips them, and reads their sources with ``ast`` only (nothing is imported).
Hand-written facts come from ``scripts/schema_overlay.json`` and are merged in.

    python scripts/generate_schema.py [--cache DIR] [--line 0.6] [--out-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from schema_extract import SourceIndex, extract_classes, extract_enums  # noqa: E402
from schema_facts import (  # noqa: E402
    deprecated_fields,
    factories,
    hf_derived,
    hf_provider,
    mixed_precision_lookup,
    mixed_precision_recipes,
)

REPO = Path(__file__).resolve().parent.parent
OUT_DIR = REPO / "mblint" / "schema" / "data"
OVERLAY = Path(__file__).resolve().parent / "schema_overlay.json"
LINES = {
    "0.3": {"megatron-bridge": "0.3.1", "megatron-core": "0.16.1"},
    "0.6": {"megatron-bridge": "0.6.2", "megatron-core": "0.19.2"},
}
# Runtime-only parts of the packages that no configuration refers to.
EXCLUDED_PACKAGES = ("inference", "diffusion", "resharding", "dist_checkpointing", "export", "fault_injector")
CONFIG_CONTAINER = "megatron.bridge.training.config.ConfigContainer"
TRANSFORMER_CONFIG = "megatron.core.transformer.transformer_config.TransformerConfig"
FORMAT = 1


# --------------------------------------------------------------------------- wheels


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


def source_roots(line: str, cache: Path) -> list[Path]:
    return [unpack_wheel(download_wheel(p, v, cache), cache) for p, v in LINES[line].items()]


# --------------------------------------------------------------------------- assembly


def load_overlay(path: Path = OVERLAY) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def keep_module(name: str) -> bool:
    parts = name.split(".")
    return not any(p in EXCLUDED_PACKAGES for p in parts[1:]) and "tests" not in parts


def build_schema(line: str, index: SourceIndex, overlay: dict) -> dict:
    classes = {q: c for q, c in extract_classes(index).items() if keep_module(c["module"])}
    compact_fields(classes)
    share_inherited_fields(classes)
    line_overlay = overlay.get("lines", {}).get(line, {})
    common = overlay.get("common", {})
    schema = {
        "format": FORMAT,
        "line": line,
        "megatron_bridge_version": LINES[line]["megatron-bridge"],
        "megatron_core_version": LINES[line]["megatron-core"],
        "root": CONFIG_CONTAINER,
        "classes": classes,
        "enums": extract_enums(index, classes),
        "hf_provider": hf_provider(index),
        "mixed_precision_recipes": mixed_precision_recipes(index),
        "mixed_precision_lookup": mixed_precision_lookup(index),
        "deprecated_fields": merged_deprecations(index, classes, line_overlay),
        "overlay": {**common.get("overlay", {}), **line_overlay.get("overlay", {}), **factories(index, common)},
    }
    schema.update(hf_derived(index, classes, TRANSFORMER_CONFIG))
    return schema


def compact_fields(classes: dict[str, dict]) -> None:
    """Drop keys the loader fills in anyway: empty ``classes``, null non-value defaults."""
    for cls in classes.values():
        for spec in cls["fields"].values():
            if not spec.get("classes"):
                spec.pop("classes", None)
            if spec.get("default") is None and spec["default_kind"] != "value":
                spec.pop("default", None)


def share_inherited_fields(classes: dict[str, dict]) -> None:
    """Store a subclass's fields as ``fields_from`` its first dataclass base plus what it adds
    or re-declares, wherever that reproduces the full, ordered field list exactly."""
    full = {q: dict(c["fields"]) for q, c in classes.items()}
    for qualname, cls in classes.items():
        base = next((b for b in cls["bases"] if b in full and b != qualname), None)
        if base is None:
            continue
        own = {k: v for k, v in full[qualname].items() if full[base].get(k) != v}
        rebuilt = {**full[base], **own}
        if list(rebuilt.items()) == list(full[qualname].items()):
            cls["fields_from"] = base
            cls["fields"] = own


def merged_deprecations(index: SourceIndex, classes: dict, line_overlay: dict) -> dict:
    found = deprecated_fields(index, classes, CONFIG_CONTAINER)
    for path, entry in line_overlay.get("deprecated_fields", {}).items():
        found.setdefault(path, entry)
    return found


def write_schema(schema: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"megatron-bridge-{schema['line']}.json"
    path.write_text(dump(schema), encoding="utf-8")
    return path


def dump(schema: dict) -> str:
    """Sorted keys; one line per class so diffs between regenerations stay readable."""
    head = {k: v for k, v in schema.items() if k != "classes"}
    lines = ["{", '"classes": {']
    items = sorted(schema["classes"].items())
    for i, (qualname, cls) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        lines.append(f"{json.dumps(qualname)}: {json.dumps(cls, sort_keys=True, separators=(',', ':'))}{comma}")
    lines.append("},")
    rest = json.dumps(head, sort_keys=True, indent=1)
    lines.append(rest[1:].lstrip("\n"))
    return "\n".join(lines) + "\n"


def generate(line: str, cache: Path, out_dir: Path) -> Path:
    index = SourceIndex.from_dirs(source_roots(line, cache))
    schema = build_schema(line, index, load_overlay())
    return write_schema(schema, out_dir)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache", type=Path, default=Path("~/.cache/mblint-schema").expanduser())
    parser.add_argument("--line", choices=sorted(LINES), action="append")
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    args = parser.parse_args(argv)
    for line in args.line or sorted(LINES):
        path = generate(line, args.cache.expanduser(), args.out_dir)
        print(f"wrote {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
