"""From a finding's fix intents to file edits, at the place the value took effect."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from mblint.findings import Finding, FixIntent
from mblint.fix.python_writer import ParsedFiles, PyEdit, PyEditError, PythonFile, py_literal
from mblint.fix.yaml_writer import YamlEdit
from mblint.model import EffectiveConfig, Origin, is_node

YAML_SUFFIXES = (".yaml", ".yml")


class Unfixable(Exception):
    """Why a finding's fix cannot be planned."""


@dataclass(frozen=True)
class FileEdit:
    path: Path
    display: str
    edit: PyEdit | YamlEdit
    in_place: bool
    intent: FixIntent
    line: int

    @property
    def is_yaml(self) -> bool:
        return isinstance(self.edit, YamlEdit)

    def conflict_key(self) -> tuple:
        e = self.edit
        if isinstance(e, PyEdit) and e.action == "add":
            return (str(self.path), "add", e.function, e.field)
        return (str(self.path), e.line, e.column)

    def payload(self) -> tuple:
        e = self.edit
        return (e.action, repr(e.value), getattr(e, "new_field", None) or getattr(e, "new_key", None))


@dataclass
class FixGroup:
    """All intents of one finding: applied together or not at all."""

    finding: Finding
    key: tuple
    edits: list[FileEdit] = field(default_factory=list)

    @property
    def in_place(self) -> bool:
        return all(e.in_place for e in self.edits)

    @property
    def safe(self) -> bool:
        return all(i.safe for i in self.finding.applicable_fixes)


def finding_key(finding: Finding, cfg: EffectiveConfig | None, overrides: tuple) -> tuple:
    recipe = cfg.recipe.label if cfg is not None else finding.recipe
    return (finding.rule_id, recipe, overrides, tuple(finding.fields))


class Planner:
    """Plans one round. ``texts`` are the current texts of files already edited in memory."""

    def __init__(self, engine, texts: dict[Path, str], parsed: ParsedFiles | None = None) -> None:
        self.engine = engine
        self.texts = texts
        self.parsed = parsed if parsed is not None else ParsedFiles()
        self._files: dict[Path, PythonFile | Exception] = {}

    def real_path(self, display: str) -> Path:
        path = Path(display)
        return path if path.is_absolute() else Path(self.engine.display_root) / path

    def editable(self, display: str) -> bool:
        return display in self.engine.editable

    def python_file(self, path: Path) -> PythonFile:
        cached = self._files.get(path)
        if cached is None:
            try:
                text = self.texts.get(path)
                if text is None:
                    from mblint.fix.files import read_state

                    state = read_state(path)
                    if state is None:
                        raise PyEditError("cannot read the file as UTF-8")
                    text = state.text
                cached = self.parsed.get(path, text)
            except PyEditError as error:
                cached = error
            self._files[path] = cached
        if isinstance(cached, Exception):
            raise Unfixable(str(cached))
        return cached

    def plan(self, finding: Finding, cfg: EffectiveConfig, overrides: tuple) -> FixGroup:
        group = FixGroup(finding, finding_key(finding, cfg, overrides))
        for intent in finding.applicable_fixes:
            group.edits.append(self.plan_intent(intent, finding, cfg))
        return group

    # ----- one intent ------------------------------------------------------------------------

    def plan_intent(self, intent: FixIntent, finding: Finding, cfg: EffectiveConfig) -> FileEdit:
        action = intent.action
        if action not in ("set", "add", "rename", "remove"):
            raise Unfixable(f"unknown fix action {action!r}")
        origins = self.origins(intent.field, cfg)
        if action in ("rename", "remove"):
            origin = origins[-1] if origins else None
            for candidate in origins:
                if candidate.sort_key() == finding.location.sort_key():
                    origin = candidate
            if origin is None:
                raise Unfixable(f"no place sets {intent.field}")
            return self.in_place(intent, origin, cfg, action)
        last = origins[-1] if origins else None
        if last is not None and last.kind == "override":
            if last.path == "--set" or not last.path.endswith(YAML_SUFFIXES):
                raise Unfixable(f"{intent.field} is set on the command line ({last.path})")
            if not self.editable(last.path):
                raise Unfixable(f"{intent.field} is set in {last.path}, which is not being linted")
            return self.in_place(intent, last, cfg, "set")
        if last is not None and last.kind == "set" and self.in_recipe(last, cfg):
            try:
                return self.in_place(intent, last, cfg, "set")
            except Unfixable:
                pass  # not an assignment mblint can rewrite alone: add one instead
        return self.add(intent, cfg)

    def origins(self, field_path: str, cfg: EffectiveConfig) -> tuple[Origin, ...]:
        origins = cfg.origins(field_path)
        if origins:
            return origins
        return tuple(origin for path, origin, _action, _value in cfg.ignored_overrides if path == field_path)

    def called_names(self, display: str, function: str) -> set[str]:
        """Names of the functions a recipe calls (``f(...)`` and ``m.f(...)``)."""
        import ast
        import textwrap

        try:
            source = self.python_file(self.real_path(display))
            tree = ast.parse(textwrap.dedent(source.code(source.function(function))))
        except (Unfixable, PyEditError, SyntaxError):
            return set()
        names = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
        return names

    def in_recipe(self, origin: Origin, cfg: EffectiveConfig) -> bool:
        """Inside the recipe function being checked, in a linted file: an edit there changes
        this recipe only (a shared helper or a base builder is never edited)."""
        if origin.path != cfg.recipe.path or not self.editable(origin.path):
            return False
        try:
            source = self.python_file(self.real_path(origin.path))
            return source.contains(source.function(cfg.recipe.function), origin.line, origin.column)
        except (Unfixable, PyEditError):
            return False

    def in_place(self, intent: FixIntent, origin: Origin, cfg: EffectiveConfig, action: str) -> FileEdit:
        if not self.editable(origin.path) or origin.kind in ("default", "unknown", "recipe"):
            raise Unfixable(f"{intent.field} is set in {origin.path}, which mblint does not edit")
        path = self.real_path(origin.path)
        if origin.path.endswith(YAML_SUFFIXES):
            key = intent.field.rsplit(".", 1)[-1]
            new_key = None
            if action == "rename":
                new_parent, _, new_key = (intent.new_field or "").rpartition(".")
                if new_parent != intent.field.rpartition(".")[0]:
                    action, new_key = "move", intent.new_field  # to another section of the file
            edit = YamlEdit(action, origin.line, origin.column, key, intent.value, new_key)
            return FileEdit(path, origin.path, edit, True, intent, origin.line)
        if not self.in_recipe(origin, cfg):
            raise Unfixable(f"{intent.field} is set outside {cfg.recipe.function}")
        edit = PyEdit(action, intent.field, intent.value, intent.new_field, origin.line, origin.column)
        try:
            source = self.python_file(path)
            source.target_at(origin.line, origin.column, intent.field)
            if action == "set":
                py_literal(intent.value)
            else:
                source.check([edit])  # renames and removals have more ways to be refused
        except PyEditError as error:
            raise Unfixable(str(error)) from error
        return FileEdit(path, origin.path, edit, True, intent, origin.line)

    def add(self, intent: FixIntent, cfg: EffectiveConfig) -> FileEdit:
        recipe = cfg.recipe
        if not self.editable(recipe.path) or recipe.path.endswith(YAML_SUFFIXES):
            raise Unfixable(f"the recipe file {recipe.path} is not being linted")
        if intent.value is not None and is_node(cfg.value(intent.field)):
            raise Unfixable(f"{intent.field} is an object, not a value")  # None may replace one (no specs, no PEFT)
        target = python_target(intent.field, cfg)
        path = self.real_path(recipe.path)
        try:
            self.python_file(path).function(recipe.function)
            py_literal(intent.value)
        except PyEditError as error:
            raise Unfixable(str(error)) from error
        edit = PyEdit("add", intent.field, intent.value, function=recipe.function, target=target)
        return FileEdit(path, recipe.path, edit, False, intent, recipe.line)


def python_target(field_path: str, cfg: EffectiveConfig) -> str:
    """``.train.micro_batch_size`` or ``.dataset.dataset_kwargs["pad"]``: the field below the
    config variable, with subscripts for dict keys. The parent node must exist (an assignment
    below a ``None`` parent would crash)."""
    parts = field_path.split(".")
    text = ""
    prefix = ""
    for index, part in enumerate(parts):
        parent_type = cfg.type_of(prefix) if prefix else "ConfigContainer"
        if prefix and parent_type is None:
            raise Unfixable(f"{prefix} is not an object mblint knows (None or unknown), so "
                            f"{field_path} cannot be set below it")
        if parent_type == "dict":
            text += "[" + py_literal(part) + "]"
        elif part.isidentifier():
            text += "." + part
        else:
            raise Unfixable(f"{part!r} is not a Python attribute name")
        prefix = f"{prefix}.{part}" if prefix else part
    return text
