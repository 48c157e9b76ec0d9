"""Launch scripts (bash, sbatch) read with tree-sitter-bash: the commands they run, each as a
list of words expanded the way the shell would, with the place in the file each word's text
was written.

Only what the script itself fixes is known: variables assigned literally in the same script
(``X=4``, ``OV="a=1 b=$X"``, ``${X:-4}``, ``$((X * 2))``), ``#SBATCH`` directives and the
Slurm variables they imply. Anything else (``$1``, ``$(...)``, a variable set in a loop, an
array, a variable from the environment without a default) is unknown, and a word built from
it is an unknown word. Nothing is run.

tree-sitter-bash rather than bashlex: bashlex rejects arrays, ``[[ ]]``, ``case`` arms and
more, and could not parse 230 of the 280 shell scripts in Megatron-Bridge's repository;
tree-sitter-bash parses all but two of them without an error node, and even then gives a
tree for the rest of the file.
"""

from __future__ import annotations

import bisect
import itertools
import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

MAX_SCRIPT_BYTES = 500_000
MAX_WORDS = 20_000  # words expanded per script, all commands together
MAX_CHARS = 1_000_000  # characters of words and variable values made per script, all together
MAX_STEPS = 200_000  # statements read per script, function calls and command strings included
MAX_ENV_COPIES = 2_000_000  # variables copied per script for branches and functions, all together
MAX_KEPT = 100_000  # exported variables kept for the commands of a script (shared while unchanged)
MAX_VALUE_CHARS = 10_000  # a variable longer than this becomes unknown
MAX_DEPTH = 100  # nesting of statements, expansions, function calls and command strings
MAX_DIGITS = 18  # a number with more digits is unknown (bash's arithmetic is 64-bit)

# A character of an expanded word: (text or None when unknown, (line, column) or None, splits).
# ``splits``: the character came from an unquoted expansion, so blanks in it separate words.
Char = tuple


UNKNOWN_PART = "\ue000"  # a private-use character: unknown text inside a command string


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN_VALUE = _Unknown()


class Sourced(_Unknown):
    """What a ``source FILE`` (``. FILE``) may have set: mblint does not read sourced files.
    ``span``: the source command; ``file``: the file as written. ``of(name)``: the unknown
    value of the variable ``name`` after it, which the characters it expands to carry in
    their position slot, so that a launch line using it can tell."""

    def __init__(self, span: "Span", file: str) -> None:
        self.span = span
        self.file = file
        self._names: dict[str, SourcedName] = {}

    def of(self, name: str) -> "SourcedName":
        found = self._names.get(name)
        if found is None:
            found = self._names[name] = SourcedName(self, name)
        return found


class SourcedName(_Unknown):
    """The unknown value of variable ``name`` after ``source``."""

    __slots__ = ("source", "name")

    def __init__(self, source: Sourced, name: str) -> None:
        self.source = source
        self.name = name


def _unknown_char(value: Any, name: str, split: bool) -> tuple:
    """The character an unknown variable expands to; after ``source``, it carries where from."""
    if isinstance(value, Sourced):
        value = value.of(name)
    return (None, value if isinstance(value, SourcedName) else None, split)


def sourced_names(words: list) -> list[SourcedName]:
    """The variables a ``source`` may have set that ``words`` (a command's) use, in order."""
    found: dict = {}
    for word in words:
        if word.text is None:
            for position in word.positions or ():
                if isinstance(position, SourcedName):
                    found.setdefault(position, None)
    return list(found)


@dataclass(frozen=True)
class Span:
    line: int
    column: int
    end_line: int
    end_column: int


@dataclass
class Word:
    """One argument of a command after expansion. ``text`` None: unknown. ``many``: an
    unknown unquoted expansion, which may stand for any number of words. ``span``: where the
    word's text was written (inside a variable's assignment when it came from one).
    ``prefix``: of an unknown word, its known text before the first unknown character
    (``--nnodes=`` of ``--nnodes=$NNODES``)."""

    text: str | None
    span: Span
    many: bool = False
    used_at: Span | None = None  # where the word appears on the command line, when elsewhere
    positions: tuple | None = field(default=None, repr=False)  # (line, column) or None per character
    prefix: str = ""
    # Of an unknown word: its text with ``UNKNOWN_PART`` for each unknown stretch (``positions``
    # then follow it), for a shell that reads the word as commands (``bash -c "$CMD"``).
    template: str | None = field(default=None, repr=False)

    @property
    def lead(self) -> str:
        """The text, or the known start of an unknown word."""
        return self.text if self.text is not None else self.prefix


@dataclass(frozen=True)
class Exported:
    """A variable of a command's environment: its value (None: unknown) and where the script
    set it (the ``export``, the assignment to a variable already exported, the prefix
    ``X=1 cmd``, the ``#SBATCH --export`` directive); None when its place is unknown too."""

    value: str | None
    span: Span | None


@dataclass
class Environment:
    """The variables a command runs with that the script sets: those exported before it and
    those assigned in front of it. ``open_at``: where the script ran something that may set
    variables mblint cannot read (``source``, ``eval`` of unknown text, ``export $NAME``): a
    variable not in ``variables`` is then unknown, not absent. ``unknown``: not even the
    variables listed are known (a launcher that replaces the environment in a way mblint
    does not read)."""

    variables: dict[str, Exported] = field(default_factory=dict)
    open_at: Span | None = None
    unknown: bool = False


@dataclass
class Command:
    words: list[Word]
    span: Span
    in_loop: bool = False
    called_at: Span | None = None  # the call of the shell function that runs it
    # A ``source`` before it, when its name is no function of the script: the sourced file may
    # define it (``source common.sh; launch_job --recipe ...``).
    after_source: "Sourced | None" = None
    environment: Environment = field(default_factory=Environment)


@dataclass
class Directive:
    """An ``#SBATCH`` option: name (``--nodes``), value (None for a flag) and where."""

    name: str
    value: str | None
    span: Span


@dataclass
class Script:
    commands: list[Command]
    directives: list[Directive]
    errors: list[tuple[int, int, str]]  # (line, column, message) of parts that did not parse
    limits: list[tuple[int, int, str]] = field(default_factory=list)  # (line, column, message): not read whole

    @property
    def truncated(self) -> bool:
        return bool(self.limits)


class _Budget:
    """The work one script may cost, shared by the readers of its command strings, heredocs
    and function calls; the first limit hit stops the reading, and says where."""

    def __init__(self) -> None:
        self.words = 0
        self.chars = 0
        self.steps = 0
        self.copies = 0
        self.kept = 0
        self.limits: list[tuple[int, int, str]] = []

    @property
    def exhausted(self) -> bool:
        return bool(self.limits)

    def spend(self, what: str, amount: int, where: tuple[int, int]) -> bool:
        """Spend ``amount``; False (and the limit recorded) once the budget is over."""
        total = getattr(self, what) + amount
        setattr(self, what, total)
        bound, name = _BOUNDS[what]
        if total > bound:
            self.stop(where, name.format(bound))
            return False
        return not self.limits

    def stop(self, where: tuple[int, int], limit: str) -> None:
        if not self.limits:
            self.limits.append((where[0], where[1], f"{limit} reached: the script is not read from here on"))


_BOUNDS = {"words": (MAX_WORDS, "word limit ({:,} words per script)"),
           "chars": (MAX_CHARS, "character limit ({:,} characters of words and values per script)"),
           "steps": (MAX_STEPS, "step limit ({:,} statements per script)"),
           "copies": (MAX_ENV_COPIES, "variable copy limit ({:,} per script)"),
           "kept": (MAX_KEPT, "exported variable limit ({:,} kept for the commands of a script)")}


class ShellParseError(ValueError):
    pass


def parse_script(text: str, script_dir: str | None = None) -> Script:
    """``script_dir``: the folder holding the script, which ``$(dirname "$0")`` and
    ``$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)`` stand for."""
    import tree_sitter
    import tree_sitter_bash

    data = text.encode("utf-8", "surrogateescape")
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    tree = parser.parse(data)
    reader = _Reader(data, script_dir)
    directives = _sbatch_directives(text)
    env = _slurm_environment(directives)
    reader.visit(tree.root_node, env, in_loop=False)
    reader.finish()
    errors = _error_nodes(tree.root_node, reader)
    return Script(reader.commands, directives, errors, reader.budget.limits)


# ----- #SBATCH ------------------------------------------------------------------------------

_SBATCH = re.compile(r"^#SBATCH[ \t]+(.*)$")


def _sbatch_directives(text: str) -> list[Directive]:
    """``#SBATCH`` lines of the script's header (sbatch stops reading them at the first
    command line)."""
    found: list[Directive] = []
    for index, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or (stripped.startswith("#") and not stripped.startswith("#SBATCH")):
            continue
        match = _SBATCH.match(line)
        if match is None:
            break
        start = match.start(1)
        tokens = [(m.group(0), m.start()) for m in re.finditer(r"\S+", match.group(1))]
        position = 0
        while position < len(tokens):
            token, offset = tokens[position]
            column = start + offset + 1
            if token.startswith("#"):
                break
            name, eq, value = token.partition("=")
            end = column + len(token)
            if not eq and name in _SBATCH_VALUED and position + 1 < len(tokens):
                value, offset2 = tokens[position + 1]
                end = start + offset2 + len(value) + 1
                position += 1
            found.append(Directive(name, value if (eq or value) else None, Span(index, column, index, end)))
            position += 1
    return found


_SBATCH_VALUED = {"--export", "-N", "--nodes", "-n", "--ntasks", "--ntasks-per-node", "--gpus-per-node", "-G", "--gpus",
                  "--gres", "-p", "--partition", "-A", "--account", "-t", "--time", "-J", "--job-name", "-o",
                  "--output", "-e", "--error", "-c", "--cpus-per-task", "--mem", "-w", "--nodelist"}


def _slurm_environment(directives: list[Directive]) -> dict:
    """The variables Slurm sets in the job from its ``#SBATCH`` options (sbatch(1), OUTPUT
    ENVIRONMENT VARIABLES): node count, tasks and GPUs per node."""
    env: dict = {}
    for directive in directives:
        value = directive.value
        if value is None:
            continue
        exported = sbatch_export(value) if directive.name == "--export" else None
        if exported:
            column = directive.span.end_column - len(value)  # each token's first column, in turn
            for token in value.split(","):
                name, eq, text = token.partition("=")
                if eq:  # the last of a name's values wins
                    start = column + len(name) + 1
                    env[name] = [(ch, (directive.span.line, start + i), True) for i, ch in enumerate(text)]
                    env[_EXPORT + name] = directive.span
                column += len(token) + 1
            env[_EXPORTS] = env.get(_EXPORTS, frozenset()) | exported.keys()
        names = {"-N": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"), "--nodes": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
                 "--ntasks-per-node": ("SLURM_NTASKS_PER_NODE",), "--gpus-per-node": ("SLURM_GPUS_PER_NODE",),
                 "-n": ("SLURM_NTASKS",), "--ntasks": ("SLURM_NTASKS",)}.get(directive.name, ())
        for name in names:
            if _is_number(value):
                env[name] = _literal(value, directive.span, value_offset=len(directive_text(directive)) - len(value))
    return env


def sbatch_export(value: str | None) -> dict[str, str] | None:
    """The variables a ``--export`` value of sbatch or srun sets (``ALL,NAME=VALUE,...``), when it
    is that simple; None otherwise (``NONE``, no ``ALL``, an expansion or quote in a value: the
    environment it gives is not read). A bare ``NAME`` passes the caller's own value on."""
    if not value:
        return None
    tokens = value.split(",")
    if "ALL" not in tokens:
        return None
    found: dict[str, str] = {}
    for token in tokens:
        name, eq, text = token.partition("=")
        if not VARIABLE_NAME.match(name) or any(ch in text for ch in "$`'\"\\"):
            return None
        if eq:
            found[name] = text
    return found


VARIABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def directive_text(directive: Directive) -> str:
    return directive.name + ("=" + directive.value if directive.value is not None else "")


def _literal(value: str, span: Span, value_offset: int = 0) -> list:
    """Characters of a literal, positioned from the end of ``span`` backwards."""
    first = span.end_column - len(value)
    return [(ch, (span.line, first + i), True) for i, ch in enumerate(value)]


# ----- the walk -----------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, script_dir: str | None = None, budget: _Budget | None = None,
                 depth: int = 0) -> None:
        self.data = data
        self.script_dir = script_dir
        self.lines = data.split(b"\n")
        self.line_starts = list(itertools.accumulate((len(line) + 1 for line in self.lines[:-1]), initial=0))
        self.columns: dict[int, list | None] = {}  # per row: None when ASCII, else the column of each byte
        self.commands: list[Command] = []
        self.budget = budget or _Budget()
        self.depth = depth  # of the statement, expansion or command string being read
        self.positional: list | None = None  # "$@" of the function being called; None: unknown
        self.functions: dict[str, Any] = {}  # name -> body
        self.calling: list[str] = []
        self.uncalled: dict[str, tuple[int, list[Command]]] = {}  # name -> (place, commands) read at definition
        self.frames: list[dict] = []  # per function call: the variables it declared local, with their values before
        self.fields = False  # expanding a command's arguments: a quoted "$@" is one word per argument
        self.exported: tuple | None = None  # (state, variables) of the last command's exports, shared while unchanged

    # positions

    def position(self, row: int, byte_column: int) -> tuple[int, int]:
        """1-based line and character column of a tree-sitter point."""
        columns = self.columns.get(row, _ABSENT)
        if columns is _ABSENT:
            line = self.lines[row] if row < len(self.lines) else b""
            columns = None if line.isascii() else list(itertools.accumulate((not 0x80 <= b < 0xC0 for b in line),
                                                                            initial=0))
            self.columns[row] = columns
        if columns is None:
            return row + 1, byte_column + 1
        return row + 1, columns[min(byte_column, len(columns) - 1)] + 1

    def span(self, node: Any) -> Span:
        line, column = self.position(*node.start_point)
        end_line, end_column = self.position(*node.end_point)
        return Span(line, column, end_line, end_column)

    def text(self, node: Any) -> str:
        return node.text.decode("utf-8", "surrogateescape")

    def deeper(self, node: Any) -> bool:
        """Enter one more level of nesting; False (and the limit recorded) past ``MAX_DEPTH``."""
        if self.depth >= MAX_DEPTH:
            self.budget.stop(self.position(*node.start_point), f"nesting limit ({MAX_DEPTH} levels)")
            return False
        self.depth += 1
        return True

    # statements

    def visit(self, node: Any, env: dict, in_loop: bool) -> None:
        if not self.budget.spend("steps", 1, self.position(*node.start_point)) or not self.deeper(node):
            return
        try:
            self.statement(node, env, in_loop)
        finally:
            self.depth -= 1

    def statement(self, node: Any, env: dict, in_loop: bool) -> None:
        kind = node.type
        if kind == "redirected_statement" and self.heredoc(node, env, in_loop):
            return
        if kind == "subshell":
            self.in_child(node.named_children, env, in_loop, node)
        elif kind == "pipeline" and len(node.named_children) > 1:  # each of its commands runs in a child too
            for child in node.named_children:
                self.in_child([child], env, in_loop, child)
        elif kind == "list" and len(node.children) == 3 and node.children[1].type in ("&&", "||"):
            self.and_or(node, env, in_loop)
        elif kind in ("program", "compound_statement", "do_group", "redirected_statement", "list",
                      "pipeline", "negated_command", "else_clause", "elif_clause"):
            for child in node.named_children:
                self.visit(child, env, in_loop)
        elif kind == "variable_assignment":
            self.assign(node, env)
        elif kind == "variable_assignments":
            for child in node.named_children:
                self.visit(child, env, in_loop)
        elif kind == "declaration_command":
            if self.frames and node.children and self.text(node.children[0]) in ("local", "declare", "typeset"):
                frame = self.frames[-1]
                for child in node.named_children:
                    target = child.child_by_field_name("name") if child.type == "variable_assignment" else child
                    if target is not None and target.type == "variable_name":
                        frame.setdefault(self.text(target), env.get(self.text(target), _ABSENT))
            exporting = self.exporting(node)
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self.assign(child, env)
                    name_node = child.child_by_field_name("name")
                    if exporting is not None and name_node is not None and name_node.type == "variable_name":
                        self.export(self.text(name_node), exporting, env, node)
                elif child.type == "variable_name":
                    env.setdefault(self.text(child), UNKNOWN_VALUE)
                    if exporting is not None:
                        self.export(self.text(child), exporting, env, node)
                elif exporting is not None and child.type != "word":
                    env[_OPEN] = self.span(node)  # ``export $NAME``: which variable it exports is unknown
        elif kind == "unset_command":
            for child in node.named_children:
                name = self.text(child).strip("'\"")
                if "[" in name:  # unset 'A[1]': the array's elements are no longer known
                    env[name.partition("[")[0]] = UNKNOWN_VALUE
                else:
                    env.pop(name, None)
                    env.pop(_EXPORT + name, None)
        elif kind == "command":
            self.command(node, env, in_loop)
        elif kind == "if_statement":
            self.if_statement(node, env, in_loop)
        elif kind in ("for_statement", "c_style_for_statement", "while_statement"):
            self.loop(node, env)
        elif kind == "case_statement":
            branches = [child for child in node.named_children if child.type == "case_item"]
            self.branches(branches, env, in_loop, exhaustive=False)
        elif kind == "function_definition":
            self.define(node, env, in_loop)
        elif kind == "case_item":
            for child in node.named_children[1:]:
                self.visit(child, env, in_loop)

    def and_or(self, node: Any, env: dict, in_loop: bool) -> None:
        """``A && B``, ``A || B``: B runs as A's status decides, a branch unless A is a test
        mblint can answer."""
        first, operator, second = node.children
        self.visit(first, env, in_loop)
        decided = self.test(first, env)
        if decided is None:
            self.branches([[second]], env, in_loop, exhaustive=False, node=node)
        elif decided is (operator.type == "&&"):
            self.visit(second, env, in_loop)

    def in_child(self, nodes: list, env: dict, in_loop: bool, where: Any) -> None:
        """Statements a child process runs (a subshell, a command of a pipeline): what they
        assign or export stays there."""
        if self.copied(env, where):
            inner = dict(env)
            for node in nodes:
                self.visit(node, inner, in_loop)

    def exporting(self, node: Any) -> bool | None:
        """What a declaration does to the export attribute of the variables it names: True
        (``export``, ``declare -x``), False (``export -n``, ``declare +x``), None (neither, or
        functions: ``export -f``)."""
        keyword = self.text(node.children[0]) if node.children else ""
        flags = [self.text(child) for child in node.named_children if child.type == "word"]
        if any("f" in flag or "F" in flag for flag in flags):
            return None
        if keyword == "export":
            return not any(flag.startswith("-") and "n" in flag for flag in flags)
        if keyword in ("declare", "typeset", "local"):
            if any(flag.startswith("+") and "x" in flag for flag in flags):
                return False
            return True if any(flag.startswith("-") and "x" in flag for flag in flags) else None
        return None

    def export(self, name: str, on: bool, env: dict, node: Any) -> None:
        if on:
            self.mark(name, self.span(node), env)
        else:
            env.pop(_EXPORT + name, None)

    def mark(self, name: str, place: Any, env: dict) -> None:
        """Variable ``name`` is exported, its value set at ``place`` (a span; unknown: it may be)."""
        env[_EXPORT + name] = place
        names = env.get(_EXPORTS, frozenset())
        if name not in names:
            env[_EXPORTS] = names | {name}

    def environment(self, env: dict, node: Any) -> Environment:
        """The variables exported now, and those assigned in front of ``node`` (``X=1 cmd``)."""
        names = env.get(_EXPORTS, frozenset())
        where = self.position(*node.start_point)
        if not self.budget.spend("copies", len(names), where):
            return Environment(unknown=True)
        state = tuple((name, env.get(_EXPORT + name, _ABSENT), env.get(name, _ABSENT)) for name in sorted(names))
        if self.exported is not None and _unchanged(state, self.exported[0]):
            variables = self.exported[1]  # shared with the command before, not kept again
        else:
            variables = self.exported_variables(state)
            if not self.budget.spend("kept", len(variables), where):
                return Environment(unknown=True)
            self.exported = (state, variables)
        return self.with_prefix(variables, env, node)

    def exported_variables(self, state: tuple) -> dict[str, Exported]:
        variables: dict[str, Exported] = {}
        for name, mark, value in state:
            if mark is _ABSENT or value is _ABSENT:
                continue
            if isinstance(mark, Span):
                variables[name] = Exported(_text_of(value), mark)
            else:  # after ``source``, or exported on one way through an ``if`` only
                variables[name] = Exported(None, None)
        return variables

    def with_prefix(self, exported: dict[str, Exported], env: dict, node: Any) -> Environment:
        """``exported`` with the assignments in front of ``node``, and whether it is open."""
        variables = exported
        prefix = [child for child in node.children if child.type == "variable_assignment"]
        if prefix:
            variables = dict(exported)
            inner = dict(env)
            for child in prefix:
                name_node = child.child_by_field_name("name")
                self.assign(child, inner)
                if name_node is not None and name_node.type == "variable_name":
                    name = self.text(name_node)
                    variables[name] = Exported(_text_of(inner.get(name, _ABSENT)), self.span(child))
        opened = env.get(_OPEN)
        sourced = env.get("*")
        if sourced is not None and not isinstance(opened, Span):
            opened = sourced
        if opened is None:
            return Environment(variables)
        return Environment(variables, opened if isinstance(opened, Span) else
                           opened.span if isinstance(opened, Sourced) else self.span(node))

    def define(self, node: Any, env: dict, in_loop: bool) -> None:
        """A function is read where it is called, with the call's arguments as ``"$@"``; one
        that is never called is read as it is defined, its arguments unknown."""
        name_node = node.child_by_field_name("name")
        body = node.child_by_field_name("body")
        for name in _assigned_names(node, self):
            env[name] = UNKNOWN_VALUE  # the function may run at any point after this
        if name_node is None or body is None or not self.copied(env, node):
            return
        name = self.text(name_node)
        self.functions[name] = body
        before = len(self.commands)
        self.visit(body, dict(env), in_loop)
        self.uncalled[name] = (before, self.commands[before:])
        del self.commands[before:]

    def call(self, name: str, words: list[Word], env: dict, in_loop: bool, node: Any) -> None:
        if name in self.calling:  # recursion: what it would run is unknown
            return
        self.uncalled.pop(name, None)
        saved = self.positional
        self.positional = None if any(w.many for w in words[1:]) else [_chars_of(w) for w in words[1:]]
        self.calling.append(name)
        self.frames.append({})
        before = len(self.commands)
        try:
            self.visit(self.functions[name], env, in_loop)
        finally:
            self.calling.pop()
            self.positional = saved
            for variable, value in self.frames.pop().items():  # a function's local variables end with it
                if value is _ABSENT:
                    env.pop(variable, None)
                else:
                    env[variable] = value
        for command in self.commands[before:]:
            command.called_at = command.called_at or self.span(node)

    def finish(self) -> None:
        """The commands of functions never called, where they were defined."""
        for place, commands in sorted(self.uncalled.values(), key=lambda entry: entry[0], reverse=True):
            self.commands[place:place] = commands
        self.uncalled = {}

    def copied(self, env: dict, node: Any) -> bool:
        return self.budget.spend("copies", len(env), self.position(*node.start_point))

    def assign(self, node: Any, env: dict) -> None:
        name_node = node.child_by_field_name("name")
        value_node = node.child_by_field_name("value")
        if name_node is None or name_node.type != "variable_name":
            if name_node is not None and name_node.type == "subscript":  # X[i]=...: the array is unknown
                base = name_node.child_by_field_name("name")
                if base is not None:
                    env[self.text(base)] = UNKNOWN_VALUE
            return
        name = self.text(name_node)
        appending = any(child.type == "+=" for child in node.children)
        if value_node is None:
            value: Any = []
        elif value_node.type == "array":
            value = self.array(value_node, env)
        else:
            value = self.expand(value_node, env, quoted=True)
            if len(value) > MAX_VALUE_CHARS or all(ch[0] is None for ch in value) and value:
                value = next((ch[1] for ch in value[:1] if isinstance(ch[1], SourcedName)), UNKNOWN_VALUE)
        if appending:
            value = _appended(env.get(name, []), value)
        size = _size(value)
        if size > MAX_VALUE_CHARS or not self.budget.spend("chars", size, self.position(*node.start_point)):
            value = UNKNOWN_VALUE
        env[name] = value
        mark = env.get(_EXPORT + name)
        if isinstance(mark, Span) or env.get(_ALLEXPORT) is True:  # exported: the place its value comes from
            self.mark(name, self.span(node), env)
        elif _ALLEXPORT in env:  # after ``source``: whether ``set -a`` is on is unknown
            self.mark(name, UNKNOWN_VALUE, env)

    def array(self, node: Any, env: dict) -> Any:
        """``(a "b c" $X)``: its elements, split and expanded as a command's arguments are; unknown
        when an element may be any number of words."""
        elements: list = []
        for child in node.named_children:
            if child.type == "comment":
                continue
            words = self.words_of(child, env)
            if self.budget.exhausted or any(word.many for word in words):
                return UNKNOWN_VALUE
            elements.extend(_chars_of(word) for word in words)
        return _Array(elements)

    def command(self, node: Any, env: dict, in_loop: bool, words: list[Word] | None = None) -> None:
        words = self.command_words(node, env) if words is None else words
        if not words:
            return
        first = words[0].text
        if first in ("source", "."):
            sourced = Sourced(self.span(node), words[1].lead if len(words) > 1 else "")
            for key in list(env):
                if key != _EXPORTS:
                    env[key] = sourced
            env["*"] = sourced  # variables the sourced file may set
            return
        if first == "set":
            self.set_options(words, env)
        if first in ("read", "mapfile", "readarray"):
            for word in words[1:]:
                if word.text and not word.text.startswith("-"):
                    env[word.text] = UNKNOWN_VALUE
        if first in self.functions:
            before = self.prefix_exports(node, env)
            try:
                self.call(first, words, env, in_loop, node)
            finally:
                for key, value in before.items():  # they end with the call
                    if value is _ABSENT:
                        env.pop(key, None)
                    else:
                        env[key] = value
            return
        if first == "eval" and len(words) > 1:
            joined = _joined(words[1:])
            if joined.text is None:  # text mblint cannot know: it may export anything
                env[_OPEN] = self.span(node)
            if joined.text is not None or joined.template is not None:
                self.command_string(joined, env, in_loop, [])
                return
        inner = _shell_string(words) or _remote_string(words)
        if inner is not None:
            index, string = inner
            self.command_string(string, env, in_loop, words[:index], child=True)
            return
        sourced = env.get("*")
        self.commands.append(Command(words, self.span(node), in_loop,
                                     after_source=sourced if isinstance(sourced, Sourced) else None,
                                     environment=self.environment(env, node)))

    def prefix_exports(self, node: Any, env: dict) -> dict:
        """``X=1 f``: X is set and exported while function f runs. The keys this changes, with
        their values before (``_ABSENT``: none)."""
        before: dict = {}
        for child in node.children:
            name_node = child.child_by_field_name("name") if child.type == "variable_assignment" else None
            if name_node is None or name_node.type != "variable_name":
                continue
            name = self.text(name_node)
            for key in (name, _EXPORT + name):
                before.setdefault(key, env.get(key, _ABSENT))
            self.assign(child, env)
            self.mark(name, self.span(child), env)
        return before

    def set_options(self, words: list[Word], env: dict) -> None:
        """``set -a`` (``set -o allexport``): every variable assigned after it is exported."""
        texts = [word.text for word in words[1:]]
        for index, text in enumerate(texts):
            if text is None:
                continue
            named = text in ("-o", "+o") and index + 1 < len(texts) and texts[index + 1] == "allexport"
            if named or (text[:1] in "-+" and text[1:].isalpha() and "a" in text[1:]):
                if text.startswith("-"):
                    env[_ALLEXPORT] = True
                else:
                    env.pop(_ALLEXPORT, None)

    def command_words(self, node: Any, env: dict) -> list[Word]:
        name = node.child_by_field_name("name")
        if name is None:
            return []
        words: list[Word] = []
        for child in node.children:
            if child.type in ("variable_assignment", "file_redirect", "herestring_redirect", "heredoc_redirect"):
                continue
            if not child.is_named or child.type == "comment":
                continue
            target = child.named_children[0] if child.type == "command_name" and child.named_children else child
            words.extend(self.words_of(target, env))
            if self.budget.exhausted:
                return []
        return words

    def heredoc(self, node: Any, env: dict, in_loop: bool) -> bool:
        """``bash <<EOF`` (``srun bash``, ``bash -s``...): the document is the script the shell
        runs, expanded first by this shell unless its delimiter is quoted. True when read so."""
        commands = [child for child in node.named_children if child.type == "command"]
        redirects = [child for child in node.named_children if child.type == "heredoc_redirect"]
        if len(commands) != 1 or len(redirects) != 1:
            return False
        body = next((child for child in redirects[0].named_children if child.type == "heredoc_body"), None)
        start = next((child for child in redirects[0].named_children if child.type == "heredoc_start"), None)
        if body is None or start is None:
            return False
        words = self.command_words(commands[0], env)
        shell = _shell_at(words)
        if shell is None:  # ``cat <<EOF``: the command as any other, its words read once
            self.command(commands[0], env, in_loop, words)
            return True
        if any(quote in self.text(start) for quote in "'\"\\"):
            line, column = self.position(*body.start_point)
            chars = _positioned(self.text(body), line, column, splits=False)
        else:
            chars = self.quoted_parts(body, env, body.start_byte, body.end_byte)
        if not self.budget.spend("chars", len(chars), self.position(*body.start_point)):
            return True
        document = _word(chars, self.span(body), many=False)
        self.command_string(document, env, in_loop, words[:shell], child=True)
        return True

    def command_string(self, word: Word, env: dict, in_loop: bool, prefix: list[Word], child: bool = False) -> None:
        """``bash -c "$CMD"``, ``eval "$CMD"``, a heredoc: the commands of the string, read with
        the variables in force (a ``$`` escaped in the script is expanded by the inner shell:
        unknown unless known here), each after ``prefix`` (``srun ... bash -c``: ``srun ...``).
        Positions map into the string's text when it was written on one line. ``child``: another
        shell runs it (not ``eval``), so what it assigns or exports stays there. Each string
        costs a copy of the variables (their places are looked through)."""
        import tree_sitter
        import tree_sitter_bash

        source = word.text if word.text is not None else word.template
        if source is None or not self.deeper_string(word):
            return
        if not self.budget.spend("copies", len(env), (word.span.line, word.span.column)):
            return
        if child:
            env = dict(env)
        data = source.encode("utf-8", "surrogateescape")
        inner = _Reader(data, self.script_dir, self.budget, self.depth + 1)
        inner.functions = self.functions
        inner.positional = self.positional
        sourced = env.get("*")
        outside = {id(place) for place in (*env.values(), sourced.span if isinstance(sourced, Sourced) else None)
                   if isinstance(place, Span)}  # places in the script, not in the string
        tree = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language())).parse(data)
        inner.visit(tree.root_node, env, in_loop)
        inner.finish()
        starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]
        positions = word.positions or ()

        def moved(span: Span) -> Span:
            """The inner span's place in the script: where its first and last characters were
            written, when both are known and on one line."""
            if len(positions) != len(source) or span.line > len(starts) or span.end_line > len(starts):
                return word.span
            first_offset = starts[span.line - 1] + span.column - 1
            last_offset = starts[span.end_line - 1] + span.end_column - 2
            if not 0 <= first_offset <= last_offset < len(positions):
                return word.span
            first = positions[first_offset]
            if not isinstance(first, tuple):
                return word.span
            last = first
            for position in positions[first_offset:last_offset + 1]:  # as far as it was written on one line
                if not isinstance(position, tuple) or position[0] != first[0] or position[1] < last[1]:
                    break
                last = position
            return Span(first[0], first[1], last[0], last[1] + 1)

        for command in inner.commands:
            words = [_unknown_parts(Word(w.text, moved(w.span), w.many, word.used_at, prefix=w.prefix))
                     for w in command.words]
            environment = command.environment
            environment.variables = {name: Exported(variable.value, variable.span if variable.span is None or
                                                    id(variable.span) in outside else moved(variable.span))
                                     for name, variable in environment.variables.items()}
            if environment.open_at is not None and id(environment.open_at) not in outside:
                environment.open_at = moved(environment.open_at)
            self.commands.append(Command(prefix + words, moved(command.span), in_loop, environment=environment))

    def deeper_string(self, word: Word) -> bool:
        if self.depth + 1 >= MAX_DEPTH:
            where = (word.span.line, word.span.column)
            self.budget.stop(where, f"nesting limit ({MAX_DEPTH} levels)")
            return False
        return True

    def if_statement(self, node: Any, env: dict, in_loop: bool) -> None:
        condition = node.child_by_field_name("condition")
        body: list = []
        rest: list = []
        seen_then = False
        for child in node.children:
            if child.type == "then":
                seen_then = True
            elif child.type in ("elif_clause", "else_clause"):
                rest.append(child)
            elif seen_then and child.is_named and child is not condition:
                body.append(child)
        decided = self.test(condition, env) if condition is not None else None
        if decided is True:
            for child in body:
                self.visit(child, env, in_loop)
            return
        if decided is False:
            if rest:
                first = rest[0]
                if first.type == "else_clause":
                    self.visit(first, env, in_loop)
                elif self.deeper(first):  # elif: the same question again
                    try:
                        self.if_statement(first, env, in_loop)
                    finally:
                        self.depth -= 1
            return
        groups = [body] + [[clause] for clause in rest]
        self.branches(groups, env, in_loop, exhaustive=any(c.type == "else_clause" for c in rest), node=node)

    def branches(self, groups: list, env: dict, in_loop: bool, exhaustive: bool, node: Any = None) -> None:
        """Each branch from the same state; afterwards a variable keeps a value only when every
        way through (taking no branch too, unless one always runs) leaves it the same."""
        results = []
        for group in groups:
            members = group if isinstance(group, list) else [group]
            if not self.copied(env, node if node is not None else members[0]):
                return
            inner = dict(env)
            for child in members:
                self.visit(child, inner, in_loop)
            results.append(inner)
        if not exhaustive:
            results.append(env)
        names = set().union(*(r.keys() for r in results)) if results else set()
        for name in names:
            values = [r.get(name, _ABSENT) for r in results]
            if name == _EXPORTS:  # each variable's export attribute merges as a variable does
                env[name] = frozenset().union(*(v for v in values if v is not _ABSENT))
                continue
            first = values[0]
            if all(_same(v, first) for v in values[1:]):
                if first is _ABSENT:
                    env.pop(name, None)
                else:
                    env[name] = first
            else:
                env[name] = UNKNOWN_VALUE
    def loop(self, node: Any, env: dict) -> None:
        for name in _assigned_names(node, self):
            env[name] = UNKNOWN_VALUE
        variable = node.child_by_field_name("variable")
        if variable is not None:
            env[self.text(variable)] = UNKNOWN_VALUE
        body = node.child_by_field_name("body")
        if body is not None:
            self.visit(body, env, in_loop=True)
        for name in _assigned_names(node, self):
            env[name] = UNKNOWN_VALUE

    def test(self, node: Any, env: dict) -> bool | None:
        """``[ -n X ]``, ``[ -z X ]``, ``[ X = Y ]``, ``[ X != Y ]`` (and ``[[ ]]``) on known words."""
        if node.type != "test_command" or len(node.named_children) != 1:
            return None
        inner = node.named_children[0]
        if inner.type == "unary_expression" and len(inner.children) == 2:
            operator = self.text(inner.children[0])
            value = self.single_text(inner.children[1], env)
            if value is None or operator not in ("-n", "-z"):
                return None
            return bool(value) if operator == "-n" else not value
        if inner.type == "binary_expression" and len(inner.children) == 3:
            operator = self.text(inner.children[1])
            left = self.single_text(inner.children[0], env)
            right = self.single_text(inner.children[2], env)
            if left is None or right is None or operator not in ("=", "==", "!="):
                return None
            if "*" in right or "?" in right or "[" in right:
                return None
            return (left == right) if operator != "!=" else (left != right)
        return None

    def single_text(self, node: Any, env: dict) -> str | None:
        chars = self.expand(node, env, quoted=True)
        if any(ch[0] is None for ch in chars):
            return None
        return "".join(ch[0] for ch in chars)

    # words

    def words_of(self, node: Any, env: dict) -> list[Word]:
        self.fields = True
        try:
            chars = self.expand(node, env, quoted=False)
        finally:
            self.fields = False
        words = _split(chars, self.span(node))
        where = self.position(*node.start_point)
        if not (self.budget.spend("words", len(words), where) and self.budget.spend("chars", len(chars), where)):
            return []
        return words

    def expand(self, node: Any, env: dict, quoted: bool) -> list:
        if self.budget.exhausted or not self.deeper(node):
            return [(None, None, not quoted)]
        try:
            return self.expansion(node, env, quoted)
        finally:
            self.depth -= 1

    def expansion(self, node: Any, env: dict, quoted: bool) -> list:
        kind = node.type
        if kind in ("word", "number", "variable_name", "extglob_pattern", "test_operator", "regex"):
            return self.literal(node, unescape=not quoted)
        if kind == "raw_string":
            line, column = self.position(*node.start_point)
            body = self.text(node)[1:-1]
            return _positioned(body, line, column + 1, splits=False)
        if kind == "ansi_c_string":
            return [(None, None, False)]
        if kind in ("string", "translated_string"):
            return self.quoted_parts(node, env, node.start_byte + (2 if kind == "translated_string" else 1),
                                     node.end_byte - 1)
        if kind == "concatenation":
            out: list = []
            for child in node.children:
                out.extend(self.expand(child, env, quoted))
            return out
        if kind == "simple_expansion":
            name_node = node.named_children[0] if node.named_children else None
            return self.variable(self.text(name_node) if name_node is not None else "", env, quoted, None)
        if kind == "expansion":
            return self.braced(node, env, quoted)
        if kind == "arithmetic_expansion":
            value = self.arithmetic(node, env)
            if value is None:
                return [(None, None, not quoted)]
            line, column = self.position(*node.start_point)
            return [(ch, (line, column), False) for ch in str(value)]
        if kind == "command_substitution" and self.script_dir is not None and _SCRIPT_DIR.match(self.text(node)):
            line, column = self.position(*node.start_point)
            return [(ch, (line, column), False) for ch in self.script_dir]
        if kind in ("command_substitution", "process_substitution"):
            self.subshell(node, env)
        return [(None, None, not quoted)]  # the output of a command, brace expansion...

    def subshell(self, node: Any, env: dict) -> None:
        """The commands of ``$(...)`` or ``<(...)``: they run (a launch line among them is one),
        in a subshell, so what they assign stays there."""
        if self.copied(env, node):
            inner = dict(env)
            for child in node.named_children:
                self.visit(child, inner, in_loop=False)

    def quoted_parts(self, node: Any, env: dict, start: int, end: int) -> list:
        """The characters of a double-quoted string (or a heredoc) from byte ``start`` to
        ``end``: its text and its expansions, which are not split into words."""
        chars: list = []
        cursor = start
        for child in node.named_children:
            if child.start_byte > cursor:  # text tree-sitter gives no node (blanks between expansions)
                chars.extend(self.literal_bytes(cursor, child.start_byte))
            first = child.children[0] if child.children else None
            if first is not None and first.text[:1].isspace():  # tree-sitter puts blanks before `$` in its token
                blank = len(first.text) - len(first.text.lstrip())
                chars.extend(self.literal_bytes(child.start_byte, child.start_byte + blank))
            if child.type in ("string_content", "heredoc_content"):
                chars.extend(self.literal(child, unescape=True, in_quotes=True))
            else:
                chars.extend((c, p, s and c is None) for c, p, s in self.expand(child, env, quoted=True))
            cursor = max(cursor, child.end_byte)
        if end > cursor:
            chars.extend(self.literal_bytes(cursor, end))
        return chars

    def literal_bytes(self, start: int, end: int) -> list:
        row = bisect.bisect_right(self.line_starts, start) - 1
        line, column = self.position(row, start - self.line_starts[row])
        return _positioned(self.data[start:end].decode("utf-8", "surrogateescape"), line, column, splits=False)

    def literal(self, node: Any, unescape: bool, in_quotes: bool = False) -> list:
        line, column = self.position(*node.start_point)
        text = self.text(node)
        chars = _positioned(text, line, column, splits=False)
        if not unescape or "\\" not in text:
            return chars
        out = []
        index = 0
        while index < len(chars):
            ch = chars[index]
            if ch[0] == "\\" and index + 1 < len(chars):
                following = chars[index + 1]
                if following[0] == "\n":
                    index += 2
                    continue
                if not in_quotes or following[0] in '$`"\\':
                    out.append(following)
                    index += 2
                    continue
            out.append(ch)
            index += 1
        return out

    def variable(self, name: str, env: dict, quoted: bool, default: Any) -> list:
        if name in ("@", "*") or name.isdecimal() and name != "0" or name == "#":
            return self.arguments(name, quoted)
        value = env.get(name, _ABSENT)
        if value is _ABSENT and "*" in env:
            value = env["*"]  # after `source`, anything may be set
        if value is _ABSENT:
            if default is not None:
                return default
            return [(None, None, not quoted)]
        if isinstance(value, _Unknown):
            return [_unknown_char(value, name, not quoted)]
        if isinstance(value, _Array):  # $A is ${A[0]}
            value = value.elements[0] if value.elements else []
        return [(c, p, not quoted) for c, p, _ in value]

    def arguments(self, name: str, quoted: bool) -> list:
        """``$1``, ``$#``, ``$*`` and ``$@`` of the function being called (unknown elsewhere);
        a quoted ``"$@"`` among a command's arguments gives one word per argument."""
        arguments = self.positional
        if arguments is None:
            return [(None, None, not quoted or name == "@")]
        if name == "#":
            return [(ch, None, False) for ch in str(len(arguments))]
        if name.isdecimal():
            index = int(name) - 1 if len(name) < 4 else len(arguments)
            chosen = arguments[index] if index < len(arguments) else []
            return [(c, p, not quoted) for c, p, _ in chosen]
        chars: list = []
        for position, argument in enumerate(arguments):
            if position:
                chars.append((_BREAK, None, False) if name == "@" and quoted and self.fields else (" ", None, not quoted))
            chars.extend((c, p, not quoted) for c, p, _ in argument)
        return chars

    def braced(self, node: Any, env: dict, quoted: bool) -> list:
        children = node.children
        names = [c for c in children if c.type == "variable_name"]
        inner = [c for c in children if c.type not in ("${", "}")]
        if inner and inner[-1].type == "subscript" and (len(inner) == 1 or len(inner) == 2 and
                                                        self.text(inner[0]) == "#"):
            return self.subscripted(inner[-1], env, quoted, count=len(inner) == 2)
        if len(names) != 1 or inner[0] is not names[0]:
            return [(None, None, not quoted)]  # ${#X}, ${!X}, ${X[...]}, special parameters
        name = self.text(names[0])
        rest = inner[1:]
        if not rest:
            return self.variable(name, env, quoted, None)
        operator = self.text(rest[0])
        if operator not in (":-", "-", ":=", "="):
            return [(None, None, not quoted)]
        words = rest[1:]
        default: list = []
        for word in words:
            default.extend(self.expand(word, env, quoted=True))
        default = [(c, p, not quoted) for c, p, _ in default]
        value = env.get(name, _ABSENT)
        if "*" in env and value is _ABSENT:
            return [_unknown_char(env["*"], name, not quoted)]
        if isinstance(value, _Unknown):
            return [_unknown_char(value, name, not quoted)]
        if isinstance(value, _Array):
            value = value.elements[0] if value.elements else []
        if value is _ABSENT or (operator.startswith(":") and not value):
            if operator in (":=", "="):
                env[name] = [(c, p, True) for c, p, _ in default]
            return default
        return [(c, p, not quoted) for c, p, _ in value]

    def subscripted(self, node: Any, env: dict, quoted: bool, count: bool) -> list:
        """``${A[@]}``, ``${A[*]}``, ``${A[1]}`` and their counts ``${#A[@]}``, ``${#A[1]}``; a
        quoted ``"${A[@]}"`` among a command's arguments gives one word per element."""
        base = node.child_by_field_name("name")
        index_node = node.child_by_field_name("index")
        index = self.text(index_node) if index_node is not None else ""
        value = env.get(self.text(base), UNKNOWN_VALUE) if base is not None else UNKNOWN_VALUE  # absent: from the environment
        every = index in ("@", "*")
        if isinstance(value, _Unknown) or not (every or _is_number(index)):
            return [(None, None, not quoted or (index == "@" and not count))]
        elements = value.elements if isinstance(value, _Array) else [value]
        if not every:
            position = int(index)
            elements = [elements[position]] if position < len(elements) else []
        if count:
            if every:
                return [(ch, None, False) for ch in str(len(elements))]
            element = elements[0] if elements else []
            if any(ch[0] is None for ch in element):
                return [(None, None, False)]
            return [(ch, None, False) for ch in str(len(element))]
        separator = (_BREAK, None, False) if index == "@" and quoted and self.fields else (" ", None, not quoted)
        chars: list = []
        for position, element in enumerate(elements):
            if position:
                chars.append(separator)
            chars.extend((c, p, not quoted) for c, p, _ in element)
        return chars

    def arithmetic(self, node: Any, env: dict) -> int | None:
        expressions = node.named_children
        if len(expressions) != 1:
            return None
        return self.evaluate(expressions[0], env, depth=0)

    def evaluate(self, node: Any, env: dict, depth: int) -> int | None:
        if depth > 50:
            return None
        kind = node.type
        if kind == "number":
            text = self.text(node)
            return int(text) if _is_number(text) else None
        if kind in ("variable_name", "simple_expansion", "expansion"):
            name = self.text(node.named_children[0]) if kind == "simple_expansion" and node.named_children else self.text(node)
            if kind == "expansion":
                chars = self.braced(node, env, quoted=True)
            else:
                chars = self.variable(name, env, True, None)
            if any(ch[0] is None for ch in chars):
                return None
            text = "".join(ch[0] for ch in chars).strip()
            if not text:
                return 0
            return int(text) if _is_number(text.removeprefix("-")) else None
        if kind == "parenthesized_expression" and len(node.named_children) == 1:
            return self.evaluate(node.named_children[0], env, depth + 1)
        if kind == "binary_expression" and len(node.children) == 3:
            left = self.evaluate(node.children[0], env, depth + 1)
            right = self.evaluate(node.children[2], env, depth + 1)
            operator = self.text(node.children[1])
            if left is None or right is None:
                return None
            return _arithmetic(operator, left, right)
        if kind == "unary_expression" and len(node.children) == 2 and self.text(node.children[0]) == "-":
            value = self.evaluate(node.children[1], env, depth + 1)
            return None if value is None else -value
        return None


def _is_number(text: str) -> bool:
    """ASCII digits, at most ``MAX_DIGITS`` of them (``'²'.isdigit()`` is true; a 5,000-digit
    number is beyond bash's 64-bit arithmetic and Python's int conversion limit)."""
    return 0 < len(text) <= MAX_DIGITS and text.isascii() and text.isdigit()


def _arithmetic(operator: str, left: int, right: int) -> int | None:
    result = _operation(operator, left, right)
    return result if result is not None and abs(result) < 2**63 else None  # bash wraps at 64 bits: unknown


def _operation(operator: str, left: int, right: int) -> int | None:
    if operator == "+":
        return left + right
    if operator == "-":
        return left - right
    if operator == "*":
        return left * right
    if operator in ("/", "%"):
        if right == 0:
            return None
        quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)  # C truncation
        return quotient if operator == "/" else left - quotient * right
    return None


_ABSENT = object()
_BREAK = object()  # between two arguments of a quoted "$@" among a command's arguments
# Keys of a reader's variables that no shell variable can have: the export attribute of variable
# NAME (``_EXPORT + NAME``: where it was set, or unknown), ``set -a``, and where the environment
# became open (a ``source``, an ``eval`` of unknown text).
_EXPORT = "\x00"
_OPEN = "\x00 open"
_ALLEXPORT = "\x00 allexport"
_EXPORTS = "\x00 exports"  # the names that have an export attribute key (a frozenset), read per command


def _text_of(value: Any) -> str | None:
    """A variable's value as the text a process receives; None when unknown."""
    if not isinstance(value, list) or any(ch[0] is None for ch in value):
        return None
    return "".join(ch[0] for ch in value)


def _unchanged(state: tuple, before: tuple) -> bool:
    """The same exported variables, with the very same export places and values."""
    return len(state) == len(before) and all(
        name == old_name and mark is old_mark and value is old_value
        for (name, mark, value), (old_name, old_mark, old_value) in zip(state, before))

SHELLS = ("sh", "bash", "dash", "zsh", "ksh")
_SOURCE = r'"?\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?'
# The script's own folder: $(dirname "$0"), $(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)...
_SCRIPT_DIR = re.compile(r'\$\(\s*(?:cd\s+(?:--\s+)?"?\$\(\s*dirname\s+' + _SOURCE + r'\s*\)"?\s*(?:[&>]+\s*/dev/null\s*)?'
                         r'(?:&&|;)\s*pwd(?:\s+-P)?|dirname\s+' + _SOURCE + r')\s*\)$')


class _Array:
    """A shell array's elements, each a list of characters."""

    __slots__ = ("elements",)

    def __init__(self, elements: list) -> None:
        self.elements = elements


def _appended(before: Any, value: Any) -> Any:
    """``X+=value`` and ``A+=(values)``: a string appended to a string, elements to an array
    (a string before them is its first element); anything else is unknown."""
    if isinstance(before, _Unknown) or isinstance(value, _Unknown):
        return UNKNOWN_VALUE
    if isinstance(value, _Array):
        first = before.elements if isinstance(before, _Array) else [before] if before else []
        return _Array(first + value.elements)
    if isinstance(before, _Array):
        return UNKNOWN_VALUE  # appends to the first element: rare enough not to follow
    return list(before) + value


def _size(value: Any) -> int:
    if isinstance(value, _Array):
        return sum(len(element) for element in value.elements) + len(value.elements)
    return 0 if isinstance(value, _Unknown) else len(value)


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    if isinstance(a, _Array) and isinstance(b, _Array):
        return len(a.elements) == len(b.elements) and all(map(_same, a.elements, b.elements))
    if isinstance(a, list) and isinstance(b, list):
        return [c[0] for c in a] == [c[0] for c in b] and [c[1] for c in a] == [c[1] for c in b]
    return False


def _positioned(text: str, line: int, column: int, splits: bool) -> list:
    chars = []
    for ch in text:
        chars.append((ch, (line, column), splits))
        if ch == "\n":
            line, column = line + 1, 1
        else:
            column += 1
    return chars


def _assigned_names(node: Any, reader: _Reader) -> set[str]:
    names: set[str] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type == "variable_assignment":
            name = current.child_by_field_name("name")
            if name is not None:
                names.add(reader.text(name))
        elif current.type == "command":
            name = current.child_by_field_name("name")
            if name is not None and reader.text(name) == "read":
                names.update(reader.text(a) for a in current.named_children[1:] if a.type == "word")
        stack.extend(current.named_children)
    return names


def _split(chars: list, fallback: Span) -> list[Word]:
    """Words of an expanded argument: blanks from unquoted expansions separate words."""
    words: list[Word] = []
    current: list = []
    unknown_unquoted = False
    started = False
    for ch in chars:
        text, _, splits = ch
        if text is _BREAK:
            words.append(_word(current, fallback, unknown_unquoted))
            current, started, unknown_unquoted = [], True, False
            continue
        if text is None:
            current.append(ch)
            started = True
            unknown_unquoted = unknown_unquoted or splits
            continue
        if splits and text in " \t\n":
            if started:
                words.append(_word(current, fallback, unknown_unquoted))
            current, started, unknown_unquoted = [], False, False
            continue
        current.append(ch)
        started = True
    if started:
        words.append(_word(current, fallback, unknown_unquoted))
    elif not chars:
        pass  # an unquoted empty expansion is no word at all
    elif not any(ch[2] for ch in chars):
        words.append(Word("", fallback))  # "" is an empty word
    return words


def _word(chars: list, fallback: Span, many: bool) -> Word:
    known = next((index for index, ch in enumerate(chars) if ch[0] is None), None)
    if known is not None:
        parts = [ch for index, ch in enumerate(chars) if ch[0] is not None or index == 0 or chars[index - 1][0] is not None]
        template = "".join(UNKNOWN_PART if ch[0] is None else ch[0] for ch in parts)
        return Word(None, fallback, many=many, prefix="".join(ch[0] for ch in chars[:known]), template=template,
                    positions=tuple(ch[1] for ch in parts))
    text = "".join(ch[0] for ch in chars)
    positions = [ch[1] for ch in chars]
    span = fallback
    if positions and positions[0] is not None:
        # The text as written: from the first character to the last one written on its line
        # (``model.context_parallel_size=$CP`` points at the assignment holding it).
        first = positions[0]
        last = first
        for position in positions:
            if position is None or position[0] != first[0]:
                break
            last = position
        span = Span(first[0], first[1], last[0], last[1] + 1)
    used_at = fallback if span != fallback else None
    return Word(text, span, used_at=used_at, positions=tuple(positions))


def _chars_of(word: Word) -> list:
    """A word's characters, as a function's argument: unknown where its text is."""
    if word.text is None:
        if word.template is None:
            return [(None, None, False)]
        positions = word.positions or [None] * len(word.template)
        return [(None if ch == UNKNOWN_PART else ch, position, False) for ch, position in zip(word.template, positions)]
    positions = word.positions if word.positions and len(word.positions) == len(word.text) else [None] * len(word.text)
    return [(ch, position, False) for ch, position in zip(word.text, positions)]


def _joined(words: list[Word]) -> Word:
    """The words ``eval`` joins with blanks, as one string."""
    chars: list = []
    for index, word in enumerate(words):
        if index:
            chars.append((" ", None, False))
        chars.extend(_chars_of(word))
    joined = _word(chars, words[0].span, many=False)
    joined.span = words[0].span
    return joined


def _unknown_parts(word: Word) -> Word:
    """A word of a command string holding text unknown outside it: unknown, and it may be
    any number of words (the inner shell splits what it stands for)."""
    if word.text is not None and UNKNOWN_PART in word.text:
        return Word(None, word.span, many=True, used_at=word.used_at, prefix=word.text.partition(UNKNOWN_PART)[0])
    if word.text is None and UNKNOWN_PART in word.prefix:
        return Word(None, word.span, many=True, used_at=word.used_at, prefix=word.prefix.partition(UNKNOWN_PART)[0])
    return word


def _shell_at(words: list[Word]) -> int | None:
    """The index of a shell reading its commands from its input (``bash``, ``srun bash -s``),
    the words before it a prefix; None when the command is no such shell."""
    for index, word in enumerate(words):
        if word.text is not None and posixpath.basename(word.text) in SHELLS:
            rest = words[index + 1:]
            if all(w.text is not None and w.text.startswith("-") and "c" not in w.text[1:] for w in rest):
                return index
            return None
    return None


def _shell_string(words: list[Word]) -> tuple[int, Word] | None:
    """``bash -c STRING`` (``-lc``, ``-l -c``) anywhere in the command (``srun ... bash -c``):
    the shell's index and the string, when it is known."""
    for index, word in enumerate(words):
        if word.text is None or posixpath.basename(word.text) not in SHELLS:
            continue
        position = index + 1
        while position < len(words) and (words[position].text or "").startswith("-"):
            option = words[position].text
            position += 1
            if not option.startswith("--") and "c" in option[1:]:
                if position < len(words) and (words[position].text or words[position].template) is not None:
                    return index, words[position]
                return None
        return None
    return None


SSH_VALUED = frozenset("BbcDEeFIiJLlmOoPpRSWw")  # ssh's options that take a value (-p 22)


def _remote_string(words: list[Word]) -> tuple[int, Word] | None:
    """``ssh [options] HOST COMMAND...`` where a word of the command holds blanks (``ssh node
    "cd /x && torchrun ..."``): the index of the command's first word and its words joined with
    blanks, the string ssh hands the remote shell. None otherwise: a command of plain words is
    read as it is."""
    start = next((index for index, word in enumerate(words)
                  if word.text is not None and posixpath.basename(word.text) == "ssh"), None)
    if start is None:
        return None
    position = start + 1
    while position < len(words) and (words[position].text or "").startswith("-"):
        option = words[position].text
        position += 2 if len(option) == 2 and option[1] in SSH_VALUED else 1
    command = words[position + 1:]
    if not command or not any(word.text is not None and any(c.isspace() for c in word.text) for word in command):
        return None
    return position + 1, _joined(command)


def _error_nodes(root: Any, reader: _Reader) -> list[tuple[int, int, str]]:
    if not root.has_error:
        return []
    found = []
    stack = [root]
    while stack and len(found) < 5:
        node = stack.pop()
        if node.is_missing:  # where what it closes was opened; the node itself is at the end
            opened = node.parent if node.parent is not None and node.parent.type != "program" else node
            found.append((*reader.position(*opened.start_point), f"missing `{node.type}` for what opens here"))
            continue
        if node.type == "ERROR":
            first = next((child for child in node.children if child.type != "comment"), node)
            line, column = reader.position(*first.start_point)
            last = reader.position(*node.end_point)[0] - (node.end_point[1] == 0)
            lines = f" (lines {line}-{last} not read)" if last > line else ""
            found.append((line, column, f"shell syntax error{lines}"))
            continue
        if node.has_error:
            stack.extend(reversed(node.children))
    return sorted(found)
