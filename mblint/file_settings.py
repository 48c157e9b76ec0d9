"""The settings in force for each file of one run (``mblint.settings`` reads settings files):
asked many times per file, so each answer is kept. A settings file that cannot be read, or
names a rule selector that selects no rule, is an error of the run, said once, and the files
it governs are not checked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mblint.selection import selector_problem


class FileSettings:
    def __init__(self, resolver: Any) -> None:
        self.resolver = resolver  # mblint.settings.SettingsResolver; None: no settings files
        self.errors: set[str] = set()
        self.confinement_errors: set[tuple[str, str]] = set()  # (settings file, message)
        self.cwd: str | None = None  # the run's working folder, asked once per run
        self.link_modes: dict[Path, int] = {}  # os.lstat modes of the paths given, as discovery found them
        self._memo: dict = {}
        self._by_display: dict = {}

    def of(self, path: Path):
        """The settings in force for ``path``; None when there are none or they cannot be read."""
        return self._lookup(path)[0]

    def of_display(self, root: Path, display: str):
        """``of`` a path as findings show it (relative to ``root``); asked for every finding,
        so answered by string from memory."""
        key = (root, display)
        memo = self._by_display
        if key not in memo:
            memo[key] = self.of(root / display)
        return memo[key]

    def readable(self, path: Path) -> bool:
        return self._lookup(path)[1]

    def source(self, path: Path) -> str:
        settings = self.of(path)
        return str(settings.source) if settings is not None and settings.source is not None else ""

    def _lookup(self, path: Path) -> tuple:
        """(settings or None, readable), kept per path as given (the working folder of a run is
        fixed: display paths are relative to it too)."""
        found = self._memo.get(path)
        if found is None:
            found = self._memo[path] = self._uncached(path)
        return found

    def _uncached(self, path: Path) -> tuple:
        if self.resolver is None:
            return None, True
        from mblint.settings import SettingsError

        try:
            return self.resolver.for_path(path, self.cwd, self.link_modes.get(path)), True
        except SettingsError as error:
            self.errors.add(str(error))
            return None, False

    def excluded(self, path: Path, explicit: Any, force_exclude: bool) -> bool:
        """Whether the settings' ``exclude`` leaves ``path`` out (``explicit``: the paths given,
        which ``force_exclude`` decides for)."""
        settings = self.of(path)
        if settings is None or not settings.exclude:
            return False
        if not force_exclude and path in explicit:
            return False
        return settings.is_excluded(path)

    def with_valid_selectors(self, files: list[Path], rules: list) -> list[Path]:
        """``files`` less those whose settings name a rule selector that selects none of
        ``rules`` (the error is reported)."""
        problems: dict = {}
        for path in files:
            settings = self.of(path)
            if settings is not None and settings not in problems:
                selectors = [*(settings.select or ()), *settings.extend_select, *settings.ignore,
                             *(s for _, ids in settings.per_file_ignores for s in ids)]
                problems[settings] = selector_problem(str(settings.source or "settings"), selectors, rules)
                if problems[settings]:
                    self.errors.add(problems[settings])
        return [path for path in files if problems.get(self.of(path)) is None]

    def widen(self, project: Any, settings: Any, confinement: Any) -> None:
        """The settings' search paths and config.json folders added to ``project``, those
        outside what may be read (``confinement``) left out and said."""
        for extra in settings.resolved_search_paths():
            if not confinement.allows(extra):
                self.confinement_errors.add((str(settings.source), f"search path {extra} is outside the "
                                                                   "project: not searched"))
            elif extra not in project.search_paths:
                project.search_paths.append(extra)
        for folder in settings.resolved_hf_config_paths():
            if not confinement.allows(folder):
                self.confinement_errors.add((str(settings.source), f"hf-config-paths folder {folder} is outside the "
                                                                   "project: not read"))
            elif folder not in project.hf_config_folders:
                project.hf_config_folders.append(folder)

    def keep_linted(self, found: Any, paths: list[str], explicit: Any, force_exclude: bool,
                    search_paths: tuple[Path, ...], display: Any) -> list[str]:
        """Leave out of ``found`` the files whose settings cannot be read or exclude them, and
        those inside a search path (``--search-path``, the settings' ``search-paths``) that no
        given path names: a vendored Megatron-Bridge source is read as a dependency, not linted
        as the project's code. The notes that say what was left out."""
        from mblint.discover import import_root_holding

        left_out: dict[Path, int] = {}

        def kept(path: Path) -> bool:
            if not self.readable(path) or self.excluded(path, explicit, force_exclude):
                return False
            settings = self.of(path)
            roots = (*search_paths, *(settings.resolved_search_paths() if settings else ()))
            root = import_root_holding(path, roots, paths) if roots else None
            if root is not None:
                left_out[root] = left_out.get(root, 0) + 1
            return root is None

        found.python = [p for p in found.python if kept(p)]
        found.yaml = [p for p in found.yaml if kept(p)]
        found.scripts = [p for p in found.scripts if kept(p)]
        return [f"{count} file{'s' if count != 1 else ''} in {display(root)} not linted: "
                "it is a search path, read as a dependency; give a path inside it to lint them"
                for root, count in left_out.items()]
