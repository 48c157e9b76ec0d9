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

import re
from dataclasses import dataclass, field
from typing import Any

MAX_SCRIPT_BYTES = 500_000
MAX_WORDS = 20_000  # words expanded per script, all commands together
MAX_VALUE_CHARS = 100_000  # a variable longer than this becomes unknown

# A character of an expanded word: (text or None when unknown, (line, column) or None, splits).
# ``splits``: the character came from an unquoted expansion, so blanks in it separate words.
Char = tuple


class _Unknown:
    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN_VALUE = _Unknown()


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
    word's text was written (inside a variable's assignment when it came from one)."""

    text: str | None
    span: Span
    many: bool = False
    used_at: Span | None = None  # where the word appears on the command line, when elsewhere
    positions: tuple | None = field(default=None, repr=False)  # (line, column) or None per character


@dataclass
class Command:
    words: list[Word]
    span: Span
    in_loop: bool = False
    env: dict = field(default_factory=dict, repr=False)  # the variables in force at the command


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
    truncated: bool = False


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
    errors = _error_nodes(tree.root_node, reader)
    return Script(reader.commands, directives, errors, reader.truncated)


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


_SBATCH_VALUED = {"-N", "--nodes", "-n", "--ntasks", "--ntasks-per-node", "--gpus-per-node", "-G", "--gpus",
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
        names = {"-N": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"), "--nodes": ("SLURM_NNODES", "SLURM_JOB_NUM_NODES"),
                 "--ntasks-per-node": ("SLURM_NTASKS_PER_NODE",), "--gpus-per-node": ("SLURM_GPUS_PER_NODE",),
                 "-n": ("SLURM_NTASKS",), "--ntasks": ("SLURM_NTASKS",)}.get(directive.name, ())
        for name in names:
            if value.isdigit():
                env[name] = _literal(value, directive.span, value_offset=len(directive_text(directive)) - len(value))
    return env


def directive_text(directive: Directive) -> str:
    return directive.name + ("=" + directive.value if directive.value is not None else "")


def _literal(value: str, span: Span, value_offset: int = 0) -> list:
    """Characters of a literal, positioned from the end of ``span`` backwards."""
    first = span.end_column - len(value)
    return [(ch, (span.line, first + i), True) for i, ch in enumerate(value)]


# ----- the walk -----------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes, script_dir: str | None = None) -> None:
        self.data = data
        self.script_dir = script_dir
        self.lines = data.split(b"\n")
        self.commands: list[Command] = []
        self.words = 0
        self.truncated = False

    # positions

    def position(self, row: int, byte_column: int) -> tuple[int, int]:
        """1-based line and character column of a tree-sitter point."""
        line = self.lines[row] if row < len(self.lines) else b""
        return row + 1, len(line[:byte_column].decode("utf-8", "replace")) + 1

    def span(self, node: Any) -> Span:
        line, column = self.position(*node.start_point)
        end_line, end_column = self.position(*node.end_point)
        return Span(line, column, end_line, end_column)

    def text(self, node: Any) -> str:
        return node.text.decode("utf-8", "surrogateescape")

    # statements

    def visit(self, node: Any, env: dict, in_loop: bool) -> None:
        kind = node.type
        if kind in ("program", "compound_statement", "subshell", "do_group", "redirected_statement", "list",
                    "pipeline", "negated_command", "else_clause", "elif_clause"):
            for child in node.named_children:
                self.visit(child, env, in_loop)
        elif kind == "variable_assignment":
            self.assign(node, env)
        elif kind == "variable_assignments":
            for child in node.named_children:
                self.visit(child, env, in_loop)
        elif kind == "declaration_command":
            for child in node.named_children:
                if child.type == "variable_assignment":
                    self.assign(child, env)
                elif child.type == "variable_name":
                    env.setdefault(self.text(child), UNKNOWN_VALUE)
        elif kind == "unset_command":
            for child in node.named_children:
                env.pop(self.text(child), None)
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
            inner = dict(env)
            for name in _assigned_names(node, self):
                env[name] = UNKNOWN_VALUE  # the function may run at any point after this
            body = node.child_by_field_name("body")
            if body is not None:
                self.visit(body, inner, in_loop)
        elif kind == "case_item":
            for child in node.named_children[1:]:
                self.visit(child, env, in_loop)

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
            value = UNKNOWN_VALUE
        else:
            value = self.expand(value_node, env, quoted=True)
            if any(ch[0] is None for ch in value) or len(value) > MAX_VALUE_CHARS:
                value = UNKNOWN_VALUE
        if appending:
            before = env.get(name, [])
            value = UNKNOWN_VALUE if before is UNKNOWN_VALUE or value is UNKNOWN_VALUE else list(before) + value
        env[name] = value

    def command(self, node: Any, env: dict, in_loop: bool) -> None:
        name = node.child_by_field_name("name")
        if name is None:
            return
        words: list[Word] = []
        for child in node.children:
            if child.type in ("variable_assignment", "file_redirect", "herestring_redirect", "heredoc_redirect"):
                continue
            if not child.is_named or child.type == "comment":
                continue
            target = child.named_children[0] if child.type == "command_name" and child.named_children else child
            words.extend(self.words_of(target, env))
            if self.words > MAX_WORDS:
                self.truncated = True
                return
        if not words:
            return
        first = words[0].text
        if first in ("source", "."):
            for key in list(env):
                env[key] = UNKNOWN_VALUE
            env["*"] = UNKNOWN_VALUE  # variables the sourced file may set
            return
        if first == "read":
            for word in words[1:]:
                if word.text and not word.text.startswith("-"):
                    env[word.text] = UNKNOWN_VALUE
        if first in ("bash", "sh") and len(words) >= 3 and words[1].text == "-c" and words[2].text is not None:
            self.command_string(words[2], env, in_loop)
            return
        self.commands.append(Command(words, self.span(node), in_loop, dict(env)))

    def command_string(self, word: Word, env: dict, in_loop: bool) -> None:
        """``bash -c "$CMD"``: the commands of the string, read with the variables in force
        (a ``$`` escaped in the script is expanded by the inner shell: unknown unless known
        here). Positions map into the string's text when it was written on one line."""
        import tree_sitter
        import tree_sitter_bash

        data = word.text.encode("utf-8", "surrogateescape")
        inner = _Reader(data, self.script_dir)
        inner.words = self.words
        tree = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language())).parse(data)
        inner.visit(tree.root_node, dict(env), in_loop)
        self.words = inner.words
        self.truncated = self.truncated or inner.truncated
        starts = [0] + [i + 1 for i, ch in enumerate(word.text) if ch == "\n"]
        positions = word.positions or ()

        def moved(span: Span) -> Span:
            """The inner span's place in the script: where its first and last characters were
            written, when both are known and on one line."""
            if len(positions) != len(word.text) or span.line > len(starts) or span.end_line > len(starts):
                return word.span
            first_offset = starts[span.line - 1] + span.column - 1
            last_offset = starts[span.end_line - 1] + span.end_column - 2
            if not 0 <= first_offset <= last_offset < len(positions):
                return word.span
            first = positions[first_offset]
            if first is None:
                return word.span
            last = first
            for position in positions[first_offset:last_offset + 1]:  # as far as it was written on one line
                if position is None or position[0] != first[0] or position[1] < last[1]:
                    break
                last = position
            return Span(first[0], first[1], last[0], last[1] + 1)

        for command in inner.commands:
            words = [Word(w.text, moved(w.span), w.many, word.used_at) for w in command.words]
            self.commands.append(Command(words, moved(command.span), in_loop, command.env))

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
                else:  # elif: the same question again
                    self.if_statement(first, env, in_loop)
            return
        groups = [body] + [[clause] for clause in rest]
        self.branches(groups, env, in_loop, exhaustive=any(c.type == "else_clause" for c in rest))

    def branches(self, groups: list, env: dict, in_loop: bool, exhaustive: bool) -> None:
        """Each branch from the same state; afterwards a variable keeps a value only when every
        way through (taking no branch too, unless one always runs) leaves it the same."""
        results = []
        for group in groups:
            inner = dict(env)
            for child in group if isinstance(group, list) else [group]:
                self.visit(child, inner, in_loop)
            results.append(inner)
        if not exhaustive:
            results.append(dict(env))
        names = set().union(*(r.keys() for r in results)) if results else set()
        for name in names:
            values = [r.get(name, _ABSENT) for r in results]
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
        chars = self.expand(node, env, quoted=False)
        words = _split(chars, self.span(node))
        self.words += len(words)
        return words

    def expand(self, node: Any, env: dict, quoted: bool) -> list:
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
            chars: list = []
            cursor = node.start_byte + (2 if kind == "translated_string" else 1)
            for child in node.named_children:
                if child.start_byte > cursor:  # text tree-sitter gives no node (blanks between expansions)
                    chars.extend(self.literal_bytes(cursor, child.start_byte))
                first = child.children[0] if child.children else None
                if first is not None and first.text[:1].isspace():  # tree-sitter puts blanks before `$` in its token
                    blank = len(first.text) - len(first.text.lstrip())
                    chars.extend(self.literal_bytes(child.start_byte, child.start_byte + blank))
                if child.type == "string_content":
                    chars.extend(self.literal(child, unescape=True, in_quotes=True))
                else:
                    chars.extend((c, p, False) for c, p, _ in self.expand(child, env, quoted=True))
                cursor = max(cursor, child.end_byte)
            if node.end_byte - 1 > cursor:
                chars.extend(self.literal_bytes(cursor, node.end_byte - 1))
            return chars
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
        return [(None, None, not quoted)]  # command and process substitution, brace expansion...

    def literal_bytes(self, start: int, end: int) -> list:
        row = self.data.count(b"\n", 0, start)
        line_start = self.data.rfind(b"\n", 0, start) + 1
        line, column = self.position(row, start - line_start)
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
        value = env.get(name, _ABSENT)
        if value is _ABSENT and "*" in env:
            value = UNKNOWN_VALUE  # after `source`, anything may be set
        if value is _ABSENT:
            if default is not None:
                return default
            return [(None, None, not quoted)]
        if value is UNKNOWN_VALUE:
            return [(None, None, not quoted)]
        return [(c, p, not quoted) for c, p, _ in value]

    def braced(self, node: Any, env: dict, quoted: bool) -> list:
        children = node.children
        names = [c for c in children if c.type == "variable_name"]
        inner = [c for c in children if c.type not in ("${", "}")]
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
            return [(None, None, not quoted)]
        if value is UNKNOWN_VALUE:
            return [(None, None, not quoted)]
        if value is _ABSENT or (operator.startswith(":") and not value):
            if operator in (":=", "="):
                env[name] = [(c, p, True) for c, p, _ in default]
            return default
        return [(c, p, not quoted) for c, p, _ in value]

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
            return int(text) if text.isdigit() else None
        if kind in ("variable_name", "simple_expansion", "expansion"):
            name = self.text(node.named_children[0]) if kind == "simple_expansion" and node.named_children else self.text(node)
            if kind == "expansion":
                chars = self.braced(node, env, quoted=True)
            else:
                chars = self.variable(name, env, True, None)
            if any(ch[0] is None for ch in chars):
                return None
            text = "".join(ch[0] for ch in chars).strip()
            return int(text) if re.fullmatch(r"-?\d+", text) else (0 if not text else None)
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


def command_string(word: Word, env: dict, script_dir: str | None = None) -> list[Command]:
    """The commands of a ``bash -c`` string (see ``_Reader.command_string``)."""
    if word.text is None:
        return []
    reader = _Reader(b"", script_dir)
    reader.command_string(word, env, in_loop=False)
    return reader.commands


def _arithmetic(operator: str, left: int, right: int) -> int | None:
    if operator == "+":
        return left + right
    if operator == "-":
        return left - right
    if operator == "*":
        return left * right if abs(left * right) < 10**18 else None
    if operator in ("/", "%"):
        if right == 0:
            return None
        quotient = abs(left) // abs(right) * (1 if (left >= 0) == (right >= 0) else -1)  # C truncation
        return quotient if operator == "/" else left - quotient * right
    return None


_ABSENT = object()
_SOURCE = r'"?\$(?:0|\{0\}|\{BASH_SOURCE(?:\[0\])?\}|BASH_SOURCE)"?'
# The script's own folder: $(dirname "$0"), $(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)...
_SCRIPT_DIR = re.compile(r'\$\(\s*(?:cd\s+(?:--\s+)?"?\$\(\s*dirname\s+' + _SOURCE + r'\s*\)"?\s*(?:[&>]+\s*/dev/null\s*)?'
                         r'(?:&&|;)\s*pwd(?:\s+-P)?|dirname\s+' + _SOURCE + r')\s*\)$')


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
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
    if any(ch[0] is None for ch in chars):
        return Word(None, fallback, many=many)
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


def _error_nodes(root: Any, reader: _Reader) -> list[tuple[int, int, str]]:
    if not root.has_error:
        return []
    found = []
    stack = [root]
    while stack and len(found) < 5:
        node = stack.pop()
        if node.type == "ERROR" or node.is_missing:
            line, column = reader.position(*node.start_point)
            found.append((line, column, "shell syntax error" if node.type == "ERROR" else f"missing {node.type}"))
            continue
        if node.has_error:
            stack.extend(reversed(node.children))
    return sorted(found)
