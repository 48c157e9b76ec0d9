"""The world size the rules assume for a recipe, and where it comes from: the ``--world-size``
option, the settings of the recipe's file, its ``# mblint: world-size=N`` comment, or the
recipe's name (``..._8gpu_...``). A launch line decides its own (mblint.readers.launch)."""

from __future__ import annotations

import re
from typing import Any, Callable

COMMENT = r"#\s*mblint:\s*world[-_]size\s*=\s*(\d+)"  # compiled by re when a file mentions mblint
NAME = re.compile(r"_(\d+)gpus?_")


class WorldSizes:
    """The world size of each recipe function, worked out once per function;
    ``settings_for_display`` gives the settings in force for a file shown as a path."""

    def __init__(self, settings_for_display: Callable[[str], Any]) -> None:
        self.settings_for_display = settings_for_display
        self._sizes: dict[tuple, tuple[int | None, str]] = {}
        self._comments: dict[str, int | None] = {}

    def of(self, cfg: Any, text: str, option: int | None, display_root: Any) -> tuple[int | None, str]:
        """(world size or None, its source: "option", "setting", "comment", "name" or "")."""
        key = (display_root, cfg.recipe.path, cfg.recipe.function)
        found = self._sizes.get(key)
        if found is None:
            found = self._sizes[key] = self._uncached(cfg, text, option)
        return found

    def _uncached(self, cfg: Any, text: str, option: int | None) -> tuple[int | None, str]:
        if option:
            return option, "option"
        settings = self.settings_for_display(cfg.recipe.path)
        if settings is not None and settings.world_size:
            return settings.world_size, "setting"
        from_comment = self.comment(cfg.recipe.path, text)
        if from_comment is not None:
            return from_comment, "comment"
        match = NAME.search(f"_{cfg.recipe.function}_")
        if match:
            return int(match.group(1)), "name"
        return None, ""

    def comment(self, recipe_path: str, text: str) -> int | None:
        """The ``# mblint: world-size=N`` comment of the recipe's file (searched once per file)."""
        if recipe_path not in self._comments:
            match = re.search(COMMENT, text) if "mblint" in text else None  # else never compiled
            self._comments[recipe_path] = int(match.group(1)) if match else None
        return self._comments[recipe_path]
