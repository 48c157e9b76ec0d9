"""Python entry scripts (tutorials, examples, users' training scripts) that a launch line runs
instead of Megatron-Bridge's runner: which recipe the script builds, which override file it
reads and whether it applies trailing ``KEY=VALUE`` arguments, found by reading the script,
never running it.

The script's own ``argparse`` options are read with their defaults and the values the launch
line gives; module constants such as ``SCRIPT_DIR / "conf" / NAME`` are evaluated; the
function that builds the recipe is walked statement by statement, taking an ``if`` whose test
is known. A script whose recipe depends on anything else is not analysed, and said so.
"""

from __future__ import annotations

import ast
import posixpath
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from mblint.extract.modules import SourceError

MAX_STATEMENTS = 2_000  # statements walked per entry script


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()
OVERRIDE_LOADERS = ("process_config_with_overrides",)
HYDRA_PARSERS = ("parse_hydra_overrides", "process_config_with_overrides")
# Megatron-Bridge's training entry points: they run the configuration they get, as is.
TRAINERS = ("pretrain", "finetune", "distill", "train", "run_config")
# Calls whose first argument is the configuration the script trains (and overrides).
CONFIG_CONSUMERS = ("process_config_with_overrides", "apply_overrides", "create_omegaconf_dict_config")


class _Built:
    """A local variable holding the result of a recipe call."""

    def __init__(self, func: Any, kwargs: dict) -> None:
        self.func = func
        self.kwargs = kwargs


@dataclass
class Entry:
    recipe_path: Path
    function: str
    kwargs: dict
    config_files: list[Path] = field(default_factory=list)
    applies_cli: bool = False
    missing_files: list[str] = field(default_factory=list)
    # (field path, value or UNKNOWN, (line, column, end line, end column) of the statement) set by the script itself
    mutations: list = field(default_factory=list)
    script: Path | None = None
    trainer: tuple[int, int, int, int] | None = None  # the script's (first) trainer call: where its plain run's job is


CONFIG_OPTIONS = ("--config-file", "--config_file", "--config")


def analyse_entry(engine: Any, script: Path, argv: list[str | None], config_file: Path | None = None,
                  searched: set | None = None) -> Entry | str | None:
    """The entry script's recipe (an ``Entry``), a reason why it cannot be known (a string),
    or None when the script builds no Megatron-Bridge recipe at all. ``config_file``: run as
    if given with ``--config-file config_file`` (when the script has that option);
    ``searched`` gets the places its override files were looked for."""
    searched = set() if searched is None else searched
    project = engine.project
    interp = project.interpreter_for(script)
    try:
        source = interp.finder.load(script)
    except SourceError as error:
        return f"{script.name}: {error.message}"
    reader = _EntryReader(interp, script, source.tree)
    options = reader.argparse_options()
    args = {dest: default for dest, (default, _, _, _) in options.items()}
    if config_file is not None:
        dest = next((d for d, (_, strings, _, _) in options.items() if set(strings) & set(CONFIG_OPTIONS)), None)
        if dest is not None:
            argv = list(argv) + [next(s for s in options[dest][1] if s in CONFIG_OPTIONS), str(config_file)]
    reader.apply_argv(options, args, argv)
    calls = reader.recipe_calls(args)
    if not calls:
        trainer = reader.trainer_called()
        if trainer is not None:  # it trains a configuration whose making mblint does not see
            return f"{script.name} calls {trainer}() on a configuration that comes from no recipe mblint knows"
        return None
    if reader.overridden:  # the recipe whose result the script overrides (a student, not its teacher)
        calls = reader.overridden
    distinct = {(func.module.path, func.node.name, repr(sorted(kwargs.items()))): (func, kwargs)
                for func, kwargs in calls}
    if len(distinct) > 1:
        names = ", ".join(sorted({func.node.name for func, _ in distinct.values()}))
        return f"{script.name} builds one of several recipes depending on values mblint does not know ({names})"
    func, kwargs = next(iter(distinct.values()))
    if any(value is UNKNOWN for value in kwargs.values()):
        return f"{script.name} calls {func.node.name} with arguments mblint does not know"
    if reader.opaque:
        return f"{script.name} {reader.opaque[0]}, which mblint does not follow"
    trainer = trainer_call(source.tree)
    entry = Entry(func.module.path, func.node.name, kwargs, applies_cli=reader.applies_cli, script=script.resolve(),
                  trainer=_span(trainer[1].func) if trainer is not None else None)
    entry.mutations = [(path, value, span) for built, path, value, span in reader.mutations if built.func is func]
    for value in reader.config_files:
        if value is UNKNOWN:
            return f"{script.name} reads an override file whose path mblint does not know"
        if value is None:
            continue
        path = Path(str(value))
        if not path.is_absolute():
            from mblint.pairing import find_named_file

            found = find_named_file(str(value), script, None, engine.confinement.allows, searched)
            path = found if found is not None else path
        searched.add(path)
        if path.is_file() and engine.confinement.allows(path):
            entry.config_files.append(path)
        else:
            entry.missing_files.append(str(value))
    return entry


class _EntryReader:
    def __init__(self, interp: Any, script: Path, tree: ast.Module) -> None:
        self.interp = interp
        self.script = script
        self.tree = tree
        self.constants: dict[str, Any] = {}
        self.config_files: list[Any] = []
        self.overridden: list = []  # (FuncRef, kwargs) of the recipe results handed to the override loaders
        self.mutations: list = []  # (_Built, field path, value or UNKNOWN, span) the script assigns on a recipe's result
        self.opaque: list[str] = []  # calls that get a recipe's result and may change anything in it
        self.applies_cli = False
        self.steps = 0
        self.resolved: dict[str, Any] = {}
        self.parsers: dict[str, bool] = {}  # the script's functions: whether each parses the command line
        self.namespace = _Namespace({})
        self._module_constants()

    # ----- names --------------------------------------------------------------------------

    def resolve_name(self, name: str) -> Any:
        """What a top-level ``from X import name`` or ``def name`` of the script binds, without
        running the module body (which would run ``main()``)."""
        from mblint.extract.scopes import LazyImport
        from mblint.extract.values import FuncRef

        for stmt in self.tree.body:
            if isinstance(stmt, ast.ImportFrom):
                for alias in stmt.names:
                    if (alias.asname or alias.name) == name:
                        try:
                            return self.interp.resolve_import(LazyImport(stmt.module, alias.name, self.script,
                                                                         stmt.level))
                        except (SourceError, RecursionError):
                            return None
            elif isinstance(stmt, ast.FunctionDef) and stmt.name == name:
                return FuncRef(self.interp.scope_for(self.script), stmt)
        return None

    def trainer_called(self) -> str | None:
        """The Megatron-Bridge training entry point (``pretrain``, ``finetune``...) the script
        imports from megatron.bridge and calls, if any."""
        found = trainer_call(self.tree)
        return found[0] if found is not None else None

    # ----- module constants and argparse -------------------------------------------------

    def _module_constants(self) -> None:
        for stmt in self.tree.body:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(stmt, ast.AnnAssign) else []
            value = getattr(stmt, "value", None)
            if value is None:
                continue
            for target in targets:
                if isinstance(target, ast.Name):
                    self.constants[target.id] = self.evaluate(value, {})

    def argparse_options(self) -> dict[str, tuple]:
        """dest -> (default, option strings, kind, type) of every ``add_argument`` in the script;
        the type: what argparse turns a value given as text into (``int``, ``float``, ``str``),
        None when mblint does not know it."""
        options: dict[str, tuple] = {}
        for node in ast.walk(self.tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "add_argument"):
                continue
            strings = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
            longs = [s for s in strings if s.startswith("--")]
            if not longs:
                continue
            keywords = {k.arg: k.value for k in node.keywords if k.arg}
            dest = keywords.get("dest")
            name = dest.value if isinstance(dest, ast.Constant) else longs[0][2:].replace("-", "_")
            action = keywords.get("action")
            kind = action.value if isinstance(action, ast.Constant) else "store"
            given = keywords.get("type")
            convert = str if given is None else ARGUMENT_TYPES.get(given.id) if isinstance(given, ast.Name) else None
            if kind == "store_true":
                default: Any = False
            elif _is_true(keywords.get("required")):
                default = UNKNOWN  # given on every command line that runs: its value is not the default's
            elif kind == "store_false":
                default = True
            elif "default" in keywords:
                default = self.evaluate(keywords["default"], {})
            else:
                default = None
            if isinstance(default, str) and kind == "store":  # argparse parses a text default as it parses a value
                default = _converted(default, convert)
            options[name] = (default, tuple(strings), kind, convert)
        return options

    def apply_argv(self, options: dict, args: dict, argv: list[str | None]) -> None:
        by_string = {string: (dest, kind, convert) for dest, (_, strings, kind, convert) in options.items()
                     for string in strings}
        index = 0
        while index < len(argv):
            token = argv[index]
            index += 1
            if token is None or not token.startswith("-"):
                continue
            name, eq, value = token.partition("=")
            if name not in by_string:
                continue
            dest, kind, convert = by_string[name]
            if kind in ("store_true", "store_false"):
                args[dest] = kind == "store_true"
                continue
            if not eq:
                value = argv[index] if index < len(argv) else None
                index += 1
            args[dest] = UNKNOWN if value is None else _converted(value, convert)

    # ----- the recipe ----------------------------------------------------------------------

    def recipe_calls(self, args: dict) -> list | None:
        """(FuncRef, kwargs) of each recipe call the script can make with these arguments."""
        functions = [node for node in ast.walk(self.tree) if isinstance(node, (ast.FunctionDef, ast.Module))]
        own_recipes = {id(stmt) for stmt in self.tree.body if self.defines_recipe(stmt)}
        found: list = []
        for function in functions:
            if id(function) in own_recipes:
                continue  # its calls build the recipe it is, not another one the script runs
            if not any(self.recipe_of(call) is not None for call in ast.walk(function) if isinstance(call, ast.Call)):
                continue
            if isinstance(function, ast.Module):
                body = [s for s in function.body if not isinstance(s, (ast.FunctionDef, ast.ClassDef))]
            else:
                body = function.body
            self.namespace = _Namespace(args)
            self.walk(body, {"args": self.namespace}, found)
        return found

    def parses_arguments(self, call: ast.Call) -> bool:
        """``parser.parse_args()``, ``parser.parse_known_args()``, or a call of a function of the
        script that makes one (``def parse_args(): ...; return parser.parse_args()``): the
        script's options, first of what it returns."""
        if isinstance(call.func, ast.Attribute):
            return call.func.attr in ARGUMENT_PARSERS
        if not isinstance(call.func, ast.Name):
            return False
        name = call.func.id
        if name not in self.parsers:
            function = next((stmt for stmt in self.tree.body if isinstance(stmt, ast.FunctionDef) and stmt.name == name),
                            None)
            self.parsers[name] = function is not None and any(
                isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ARGUMENT_PARSERS
                for node in ast.walk(function))
        return self.parsers[name]

    def recipe_of(self, call: ast.Call) -> Any:
        from mblint.extract.values import FuncRef

        if not isinstance(call.func, ast.Name):
            return None
        name = call.func.id
        if name not in self.resolved:
            self.resolved[name] = self.resolve_name(name)
        value = self.resolved[name]
        if not isinstance(value, FuncRef) or not value.node.name.endswith("_config"):
            return None
        path = value.module.path.as_posix()
        if "/recipes/" in path or "/perf_recipes/" in path:
            return value
        if value.module.path.resolve() == self.script.resolve() and self.defines_recipe(value.node):
            return value
        return None

    @staticmethod
    def defines_recipe(function: ast.AST) -> bool:
        """Whether a function of the script is a recipe (a private `_make_x_config` helper builds a part)."""
        return isinstance(function, ast.FunctionDef) and function.name.endswith("_config") \
            and not function.name.startswith("_")

    @staticmethod
    def consumer(call: ast.Call) -> bool:
        name = call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")
        return name in CONFIG_CONSUMERS

    def walk(self, body: list, env: dict, found: list) -> None:
        for stmt in body:
            self.steps += 1
            if self.steps > MAX_STATEMENTS:
                return
            if isinstance(stmt, ast.If):
                test = self.evaluate(stmt.test, env)
                if test is UNKNOWN:
                    self.walk(stmt.body, dict(env), found)
                    self.walk(stmt.orelse, dict(env), found)
                else:
                    self.walk(stmt.body if test else stmt.orelse, env, found)
                continue
            if isinstance(stmt, (ast.For, ast.While, ast.With, ast.Try)):
                inner = getattr(stmt, "body", []) + getattr(stmt, "orelse", []) + getattr(stmt, "finalbody", [])
                for handler in getattr(stmt, "handlers", []):
                    inner += handler.body
                self.walk(inner, env, found)
                continue
            if isinstance(stmt, (ast.FunctionDef, ast.ClassDef)):
                continue
            self.scan(stmt, env, found)
            if isinstance(stmt, (ast.Assign, ast.AnnAssign)) and stmt.value is not None:
                targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                value = self.evaluate(stmt.value, env)
                if isinstance(stmt.value, ast.Call) and self.recipe_of(stmt.value) is not None:
                    value = _Built(self.recipe_of(stmt.value), found[-1][1] if found else {})
                elif isinstance(stmt.value, ast.Call) and self.consumer(stmt.value) and stmt.value.args:
                    value = self.evaluate(stmt.value.args[0], env)  # cfg = process_config_with_overrides(cfg, ...)
                elif isinstance(stmt.value, ast.Call) and self.parses_arguments(stmt.value):
                    value = self.namespace  # args = parser.parse_args(); args, rest = parse_known_args()
                    targets = [t.elts[0] if isinstance(t, ast.Tuple) and t.elts else t for t in targets]
                for target in targets:
                    if isinstance(target, ast.Name):
                        env[target.id] = value

    def scan(self, stmt: ast.stmt, env: dict, found: list) -> None:
        if isinstance(stmt, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                path = _attribute_path(target)
                if path and isinstance(env.get(path[0]), _Built) and len(path) > 1:
                    value = self.evaluate(stmt.value, env) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else UNKNOWN
                    plain = value if isinstance(value, (bool, int, float, str)) or value is None else UNKNOWN
                    self.mutations.append((env[path[0]], path[1:], plain, _span(stmt)))
                elif not path and _names_built(target, env):  # getattr(cfg, part).x = 1, cfg.__dict__[k] = v
                    self.opaque.append(f"changes the recipe's configuration through `{_first_line(stmt)}`")
        elif isinstance(stmt, ast.Delete) and any(_names_built(target, env) for target in stmt.targets):
            self.opaque.append(f"changes the recipe's configuration through `{_first_line(stmt)}`")
        for node in ast.walk(stmt):
            if not isinstance(node, ast.Call):
                continue
            func = self.recipe_of(node)
            if func is not None:
                kwargs = {k.arg: self.evaluate(k.value, env) for k in node.keywords if k.arg}
                if node.args:
                    kwargs["*positional"] = UNKNOWN
                found.append((func, kwargs))
                continue
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            config_arg = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "config"), None)
            if name not in CONFIG_CONSUMERS and name not in TRAINERS:
                arguments = list(node.args) + [k.value for k in node.keywords]
                if self.set_literal_field(node, name, env):
                    continue
                if name in ("exec", "eval") and len(arguments) < 2 and any(isinstance(v, _Built) for v in env.values()):
                    self.opaque.append(f"runs code with {name}() where the recipe's configuration is in reach")
                for argument in arguments:
                    if isinstance(self.evaluate(argument, env), _Built) or (
                            name not in READ_ONLY_CALLS and _part_of_built(argument, env)):
                        self.opaque.append(f"passes the recipe's configuration to {name or ast.unparse(node.func)}()")
                if (isinstance(node.func, ast.Attribute) and name in DICT_MUTATORS
                        and isinstance(node.func.value, ast.Attribute) and node.func.value.attr == "__dict__"
                        and _names_built(node.func.value, env)):
                    self.opaque.append(f"changes the recipe's configuration through `{_first_line(node)}`")
            if name in CONFIG_CONSUMERS and config_arg is not None:
                built = self.evaluate(config_arg, env)
                if isinstance(built, _Built) and all(built.func is not f or built.kwargs != k for f, k in self.overridden):
                    self.overridden.append((built.func, built.kwargs))
            if name in HYDRA_PARSERS:
                keywords = {k.arg: k.value for k in node.keywords if k.arg}
                if name == "parse_hydra_overrides" or "cli_overrides" in keywords:
                    self.applies_cli = True
            if name in OVERRIDE_LOADERS:
                keywords = {k.arg: k.value for k in node.keywords if k.arg}
                target = keywords.get("config_filepath") or (node.args[1] if len(node.args) > 1 else None)
                if target is not None:
                    self.config_files.append(self.evaluate(target, env))
            elif name == "load" and isinstance(node.func, ast.Attribute) and \
                    getattr(node.func.value, "id", "") == "OmegaConf" and node.args:
                self.config_files.append(self.evaluate(node.args[0], env))

    def set_literal_field(self, node: ast.Call, name: str, env: dict) -> bool:
        """``setattr(cfg.train, "micro_batch_size", 2)``: the assignment it is (True when it is one)."""
        if name != "setattr" or len(node.args) != 3 or node.keywords:
            return False
        path = _attribute_path(node.args[0])
        field_name = node.args[1]
        if not (path and isinstance(env.get(path[0]), _Built) and isinstance(field_name, ast.Constant)
                and isinstance(field_name.value, str)):
            return False
        value = self.evaluate(node.args[2], env)
        plain = value if isinstance(value, (bool, int, float, str)) or value is None else UNKNOWN
        self.mutations.append((env[path[0]], (*path[1:], field_name.value), plain, _span(node)))
        return True

    # ----- values --------------------------------------------------------------------------

    def evaluate(self, node: ast.expr, env: dict, depth: int = 0) -> Any:
        """The value of ``node``; a string, path or list longer than the interpreter's
        ``MAX_VALUE_SIZE`` is unknown (``A1 = A0 + A0`` doubled 35 times took gigabytes)."""
        from mblint.extract.limits import MAX_VALUE_SIZE

        value = self.value_of(node, env, depth)
        if isinstance(value, (str, list, PurePosixPath)) and len(str(value) if isinstance(value, PurePosixPath)
                                                                else value) > MAX_VALUE_SIZE:
            return UNKNOWN
        return value

    def value_of(self, node: ast.expr, env: dict, depth: int) -> Any:
        if depth > 30:
            return UNKNOWN
        kind = type(node)
        if kind is ast.Constant:
            return node.value
        if kind is ast.Name:
            if node.id in env:
                return env[node.id]
            if node.id == "__file__":
                return PurePosixPath(self.script.resolve().as_posix())
            return self.constants.get(node.id, UNKNOWN)
        if kind is ast.Attribute:
            owner = self.evaluate(node.value, env, depth + 1)
            if isinstance(owner, _Namespace):
                return owner.values.get(node.attr, UNKNOWN)
            if isinstance(owner, PurePosixPath) and node.attr == "parent":
                return owner.parent
            return UNKNOWN
        if kind is ast.Call:
            return self.call(node, env, depth)
        if kind is ast.BinOp:
            left = self.evaluate(node.left, env, depth + 1)
            right = self.evaluate(node.right, env, depth + 1)
            if isinstance(node.op, ast.Div) and isinstance(left, PurePosixPath) and isinstance(right, (str, PurePosixPath)):
                return left / right
            if isinstance(node.op, ast.Add) and isinstance(left, str) and isinstance(right, str):
                return left + right
            return UNKNOWN
        if kind is ast.JoinedStr:
            parts = []
            for value in node.values:
                part = self.evaluate(value.value, env, depth + 1) if isinstance(value, ast.FormattedValue) \
                    else value.value
                if part is UNKNOWN or isinstance(value, ast.FormattedValue) and value.format_spec is not None:
                    return UNKNOWN
                parts.append(str(part))
            return "".join(parts)
        if kind is ast.IfExp:
            test = self.evaluate(node.test, env, depth + 1)
            if test is UNKNOWN:
                return UNKNOWN
            return self.evaluate(node.body if test else node.orelse, env, depth + 1)
        if kind is ast.Compare and len(node.ops) == 1:
            left = self.evaluate(node.left, env, depth + 1)
            right = self.evaluate(node.comparators[0], env, depth + 1)
            if left is UNKNOWN or right is UNKNOWN:
                return UNKNOWN
            op = type(node.ops[0])
            table = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Is: lambda a, b: a is b,
                     ast.IsNot: lambda a, b: a is not b}
            if op in (ast.In, ast.NotIn) and isinstance(right, (list, tuple, str)):
                return (left in right) == (op is ast.In)
            return table[op](left, right) if op in table else UNKNOWN
        if kind is ast.UnaryOp and isinstance(node.op, ast.Not):
            value = self.evaluate(node.operand, env, depth + 1)
            return UNKNOWN if value is UNKNOWN else not value
        if kind is ast.BoolOp:  # as Python runs it: the operands after the one that decides are not read
            deciding = not isinstance(node.op, ast.And)
            for operand in node.values:
                value = self.evaluate(operand, env, depth + 1)
                if value is UNKNOWN:
                    return UNKNOWN
                if bool(value) is deciding:
                    return deciding
            return not deciding
        if kind in (ast.List, ast.Tuple):
            return [self.evaluate(e, env, depth + 1) for e in node.elts]
        return UNKNOWN

    def call(self, node: ast.Call, env: dict, depth: int) -> Any:
        func = node.func
        args = [self.evaluate(a, env, depth + 1) for a in node.args]
        if any(a is UNKNOWN for a in args):
            return UNKNOWN
        if isinstance(func, ast.Name):
            if func.id == "Path" and len(args) == 1 and isinstance(args[0], (str, PurePosixPath)):
                return PurePosixPath(str(args[0]))
            if func.id == "str" and len(args) == 1:
                return str(args[0]) if isinstance(args[0], (str, PurePosixPath)) else UNKNOWN
            return UNKNOWN
        if isinstance(func, ast.Attribute):
            owner = self.evaluate(func.value, env, depth + 1)
            if isinstance(owner, PurePosixPath) and func.attr in ("resolve", "absolute", "expanduser") and not args:
                return owner
            dotted = ast.unparse(func)
            strings = [a for a in args if isinstance(a, (str, PurePosixPath))]
            if len(strings) == len(args) and args:
                texts = [str(a) for a in args]
                if dotted == "os.path.join":
                    return posixpath.join(*texts)
                if dotted == "os.path.dirname" and len(texts) == 1:
                    return posixpath.dirname(texts[0])
                if dotted in ("os.path.abspath", "os.path.realpath") and len(texts) == 1:
                    return texts[0]
        return UNKNOWN


# Calls that read what they are given (a part of the configuration printed or logged).
READ_ONLY_CALLS = frozenset({"print", "str", "repr", "len", "isinstance", "hasattr", "getattr", "type", "id",
                             "format", "pprint", "debug", "info", "warning", "error", "log", "asdict"})
ARGUMENT_PARSERS = ("parse_args", "parse_known_args")
ARGUMENT_TYPES = {"int": int, "float": float, "str": str}  # the ``type=`` of add_argument mblint applies
DICT_MUTATORS = frozenset({"update", "pop", "popitem", "setdefault", "clear", "__setitem__", "__delitem__"})


def _part_of_built(node: ast.expr, env: dict) -> bool:
    """``cfg.train`` (not ``cfg`` itself): an attribute chain down to a recipe's result."""
    path = _attribute_path(node)
    return len(path) > 1 and isinstance(env.get(path[0]), _Built)


def _names_built(node: ast.AST, env: dict) -> bool:
    """Some name in ``node`` holds a recipe's result."""
    return any(isinstance(n, ast.Name) and isinstance(env.get(n.id), _Built) for n in ast.walk(node))


def _first_line(node: ast.AST) -> str:
    text = ast.unparse(node).split("\n", 1)[0]
    return text if len(text) <= 60 else text[:57] + "..."


def trainer_call(tree: ast.Module) -> tuple[str, ast.Call] | None:
    """(its name, the call) of the first call, in the order of the source, of a Megatron-Bridge
    training entry point (``pretrain``, ``finetune``...) the module imports from megatron.bridge."""
    imported = {alias.asname or alias.name: alias.name for stmt in tree.body
                if isinstance(stmt, ast.ImportFrom) and (stmt.module or "").startswith("megatron.bridge.")
                for alias in stmt.names if alias.name in TRAINERS}
    if not imported:
        return None
    calls = [node for node in ast.walk(tree)
             if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in imported]
    if not calls:
        return None
    first = min(calls, key=lambda call: (call.lineno, call.col_offset))
    return imported[first.func.id], first


def _converted(text: str, convert: Any) -> Any:
    """``text`` as argparse's ``type=`` makes it; UNKNOWN for a type mblint does not know, or a
    text argparse would reject."""
    if convert is None:
        return UNKNOWN
    try:
        return convert(text)
    except ValueError:
        return UNKNOWN


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _span(node: ast.AST) -> tuple[int, int, int, int]:
    """(line, column, end line, end column) of ``node``, 1-based, the end exclusive."""
    return (node.lineno, node.col_offset + 1, node.end_lineno or node.lineno,
            (node.end_col_offset if node.end_col_offset is not None else node.col_offset) + 1)


def _attribute_path(node: ast.expr) -> tuple[str, ...]:
    """``cfg.model.seq_length`` -> ("cfg", "model", "seq_length"); () for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ()
    return (node.id, *reversed(parts))


class _Namespace:
    def __init__(self, values: dict) -> None:
        self.values = values


def entry_recipe(engine: Any, script: Path, launch: Any, searched: set) -> tuple | str | None:
    """(recipe file, function, override files, kwargs) for a launch line running a Python entry
    script; a string saying why not; None when the script is not a training entry point.
    ``searched`` gets the places the entry script and its override files were looked for, and
    the entry script found."""
    from mblint.pairing import find_named_file

    written = launch.script or ""
    path = find_named_file(written, script, None, engine.confinement.allows, searched)
    if path is None:
        return f"entry script {written} not found beside the launch script"
    words = launch.command.words
    start = next(i for i, w in enumerate(words) if w is launch.entry_word) + 1
    argv = [w.text for w in words[start:]]
    found = analyse_entry(engine, path, argv, searched=searched)
    if engine.options.use_cache:  # the script's imports only key the cache
        searched |= engine.dependencies(path)
    return _runnable(found)


def plain_run(engine: Any, script: Path, searched: set) -> tuple[ast.Call, Entry | str] | None:
    """A training script linted on its own is the job its plain run makes (``python SCRIPT``,
    ``torchrun SCRIPT``: no argument, so its ``argparse`` defaults, the override file they
    name): (the script's first call of a Megatron-Bridge trainer, the ``Entry`` or why it
    cannot be known). None when the script calls no trainer. ``searched`` gets the places its
    override files were looked for. Raises SourceError."""
    tree = engine.project.interpreter_for(script).finder.load(script).tree
    found = trainer_call(tree)
    if found is None or not runs_when_executed(tree, found[1]):
        return None
    entry = _runnable(analyse_entry(engine, script, [], searched=searched))
    return found[1], entry if entry is not None else f"{script.name} builds no configuration mblint knows"


def runs_when_executed(tree: ast.Module, call: ast.Call) -> bool:
    """Whether running the module as a script can reach ``call``: it is in the module's own
    statements (the ``if __name__ == "__main__":`` block among them) or in a function or class
    of the module that such code names, directly or through other reached ones. A decorated
    function counts as reached (a decorator may register it: ``@app.command()``). A module of
    helpers that call a trainer for others runs no job of its own."""
    definitions = {stmt.name: stmt for stmt in tree.body
                   if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    pending = [stmt for stmt in tree.body if stmt not in definitions.values() or stmt.decorator_list]
    reached: set[int] = {id(stmt) for stmt in pending}
    while pending:
        for node in ast.walk(pending.pop()):
            if node is call:
                return True
            named = definitions.get(node.id) if isinstance(node, ast.Name) else None
            if named is not None and id(named) not in reached:
                reached.add(id(named))
                pending.append(named)
    return False


def _runnable(found: Entry | str | None) -> Entry | str | None:
    """``found``, or why not when an override file it loads is not there."""
    if isinstance(found, Entry) and found.missing_files:
        return f"override file {found.missing_files[0]} not found"
    return found
