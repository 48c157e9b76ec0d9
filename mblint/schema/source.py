"""Which Megatron-Bridge source is at hand where mblint runs, and its version: a folder holding
``megatron/bridge`` among the import roots of a linted file (the checkout or unzipped package
the recipes sit in, ``search-paths``, an installed ``megatron.bridge`` on ``sys.path``).
Files are read as text, never imported."""

from __future__ import annotations

import re
from pathlib import Path

_PACKAGE_INFO = re.compile(r"^(MAJOR|MINOR|PATCH)\s*=\s*(\d{1,6})\s*$", re.M)
_PRE_RELEASE = re.compile(r"^PRE_RELEASE\s*=\s*[\"']([A-Za-z0-9.]{0,20})[\"']\s*$", re.M)
_METADATA_VERSION = re.compile(r"^Version:\s*([A-Za-z0-9.+!-]{1,40})\s*$", re.M)
MAX_INFO_BYTES = 64_000


class BridgeSource:
    """A readable Megatron-Bridge source tree: ``root`` holds ``megatron/bridge``; ``version``
    ("0.7.0", "0.7.0rc1") is None when neither package_info.py nor metadata says."""

    __slots__ = ("root", "version")

    def __init__(self, root: Path, version: str | None) -> None:
        self.root = root
        self.version = version

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BridgeSource) and (self.root, self.version) == (other.root, other.version)

    def __hash__(self) -> int:
        return hash((self.root, self.version))

    def __repr__(self) -> str:
        return f"BridgeSource({str(self.root)!r}, {self.version!r})"

    @property
    def package(self) -> Path:
        return self.root / "megatron" / "bridge"

    @property
    def has_config(self) -> bool:
        """Whether the tree holds the configuration classes a schema is derived from."""
        return (self.package / "training" / "config.py").is_file()


def find_bridge_source(roots, inside: Path | None = None) -> BridgeSource | None:
    """The Megatron-Bridge tree a file ``inside`` it belongs to (a recipe of the package
    itself), else the first of ``roots`` (folders, in import order) holding ``megatron/bridge``."""
    for folder in (inside.parents if inside is not None else ()):
        if folder.name == "bridge" and folder.parent.name == "megatron" and (folder / "__init__.py").is_file():
            return BridgeSource(folder.parent.parent, bridge_version(folder.parent.parent))
    for root in roots:
        root = Path(root)
        if (root / "megatron" / "bridge" / "__init__.py").is_file():
            return BridgeSource(root, bridge_version(root))
    return None


def bridge_source_probes(roots) -> list[Path]:
    """The files ``find_bridge_source`` reads or looks for among ``roots`` (the package, its
    version, its configuration classes): one appearing, going or changing can give another
    schema (dependencies of a file's cached result)."""
    return [Path(root) / "megatron" / "bridge" / name for root in roots
            for name in ("__init__.py", "package_info.py", "training/config.py")]


def bridge_version(root: Path) -> str | None:
    """The version ``megatron/bridge/package_info.py`` states (MAJOR.MINOR.PATCH + PRE_RELEASE),
    else the ``Version:`` of a ``megatron_bridge-*.dist-info/METADATA`` beside the package."""
    text = _read_small(root / "megatron" / "bridge" / "package_info.py")
    parts = dict(_PACKAGE_INFO.findall(text))
    if "MAJOR" in parts and "MINOR" in parts:
        pre = _PRE_RELEASE.search(text)
        return f"{parts['MAJOR']}.{parts['MINOR']}.{parts.get('PATCH', '0')}" + (pre.group(1) if pre else "")
    for info in sorted(root.glob("megatron_bridge-*.dist-info"))[:4]:
        found = _METADATA_VERSION.search(_read_small(info / "METADATA"))
        if found:
            return found.group(1)
    return None


def _read_small(path: Path) -> str:
    """The text of a small regular file (never a FIFO or device, never past the bound)."""
    from mblint.paths import read_regular

    try:
        return read_regular(path, MAX_INFO_BYTES).decode("utf-8", errors="replace")
    except (OSError, ValueError):
        return ""
