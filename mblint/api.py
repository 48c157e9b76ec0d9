"""The library entry points: resolve a recipe function to an ``EffectiveConfig``."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from mblint.model import EffectiveConfig


def resolve_recipe(
    path: str | Path,
    function: str,
    *,
    search_paths: Sequence[str | Path] = (),
    version: str | None = None,
    override_files: Sequence[str | Path] = (),
    dotlist: Sequence[str] = (),
) -> EffectiveConfig:
    """Resolve ``function`` in the recipe file ``path`` statically, then apply YAML override
    files and ``key=value`` dotlist overrides in that order. ``search_paths`` are extra roots
    for imports (the project root and an installed Megatron-Bridge are always searched).
    ``version`` picks the schema line ("0.3", "0.6"); None detects it."""
    from mblint.resolve import resolve

    return resolve(
        Path(path),
        function,
        search_paths=[Path(p) for p in search_paths],
        version=version,
        override_files=[Path(p) for p in override_files],
        dotlist=list(dotlist),
    )
