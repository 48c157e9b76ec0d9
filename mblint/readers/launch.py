"""Launch scripts as jobs: each launcher invocation mblint can read becomes a configuration
(the recipe it names, the override files and command-line overrides it passes, what
Megatron-Bridge's runner then does itself), checked by the rules with the world size the
command fixes. Findings land on the script's tokens; a value from the recipe or a YAML file is
a related location.
"""

from __future__ import annotations

import itertools
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mblint.arbitration import name_the_job
from mblint.coverage import coverage_rule_ids
from mblint.extract.launch import Launch, Setting, find_launches
from mblint.extract.modules import OUTSIDE_PROJECT, SourceError, SourceLimit, read_source
from mblint.extract.shell import MAX_SCRIPT_BYTES, Span, parse_script, sourced_names
from mblint.findings import Finding, Related, Severity
from mblint.model import UNKNOWN, LaunchEnvironment, Origin
from mblint.readers import Job, in_project, in_project_place

if TYPE_CHECKING:
    from mblint.readers import Services
    from mblint.results import FileResult

SHELL_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")
SHELLS = ("sh", "bash", "dash", "zsh", "ksh")


def is_shell_script(path: Path, head: bytes | None = None) -> bool:
    """``*.sh``, ``*.bash``, ``*.sbatch``, ``*.slurm``, or a file whose first line is a shell
    shebang (``#!/bin/bash``, ``#!/usr/bin/env bash``)."""
    if path.suffix in SHELL_SUFFIXES:
        return True
    if head is None:
        return False
    first = head.split(b"\n", 1)[0]
    if not first.startswith(b"#!"):
        return False
    parts = first[2:].decode("ascii", "replace").split()
    if not parts:
        return False
    program = parts[0].rsplit("/", 1)[-1]
    if program == "env" and len(parts) > 1:
        program = parts[1 + (parts[1] == "-S")] if len(parts) > 1 + (parts[1] == "-S") else ""
    return program in SHELLS


class LaunchReader:
    def __init__(self, engine: "Services") -> None:
        self.engine = engine
        self._lookups: dict[int, Any] = {}
        self.collected: list | None = None  # (launch, configuration) of each launch, for `mblint show`

    # ----- one script --------------------------------------------------------------------

    def read(self, path: Path, result: "FileResult") -> set[Path]:
        engine = self.engine
        engine.enter_file(path)
        try:
            text = self.read_text(path, MAX_SCRIPT_BYTES, "a shell script")
        except SourceError as error:
            engine.syntax_finding(error, result)
            return set()
        display = engine.project_display(path)
        script = parse_script(text, str(path.resolve().parent))
        for line, column, message in script.errors:
            self.finding("LA002", display, Span(line, column, line, column + 1),
                         f"{message}: bash stops a script at its first syntax error, so the commands after it do not "
                         "run, and a launch line mblint cannot read is not checked", result)
        for line, column, message in script.limits:
            engine.syntax_finding(SourceLimit(path, message, line, column), result)
        deps: set[Path] = set()
        sourced: set = set()
        launches = find_launches(script.commands, script.directives)
        for launch in launches:
            self.report_sourced(display, launch, sourced, result)
            deps |= self.check_launch(path, display, launch, result)
        self.report_sourced_commands(display, script.commands, {id(launch.command) for launch in launches},
                                     sourced, result)
        return deps

    def report_sourced_commands(self, display: str, commands: list, launched: set, reported: set,
                                result: "FileResult") -> None:
        """LA002 once at a ``source FILE`` after which a command the script does not define runs
        with a launch's arguments (``--recipe``, ``--config-file``, ``section.key=value``): the
        sourced file may define it as the function that launches the job."""
        for command in commands:
            source = command.after_source
            if source is None or source in reported or id(command) in launched or not command.words:
                continue
            name = command.words[0].text
            if (name is not None and ("/" in name or name in SHELL_BUILTINS)
                    or not any(_launch_argument(word.text) for word in command.words[1:])):
                continue
            reported.add(source)
            what = (f"`{_clipped(name, 40)}` at line {command.span.line}, which the script does not define,"
                    if name is not None else f"the command at line {command.span.line}, whose name mblint does not know,")
            self.finding("LA002", display, source.span, (
                f"the file this sources ({_clipped(source.file) or 'unnamed'}) is not read (mblint reads no sourced "
                f"file), and {what} runs with a launch's arguments: it may be a function of that file, or a command it "
                "names, that launches the job, which is not checked"), result)

    def report_sourced(self, display: str, launch: Launch, reported: set, result: "FileResult") -> None:
        """LA002 once at each ``source FILE`` whose variables a launch line uses: mblint does not
        read sourced files, so what they set is unknown. Info when only launcher options (the
        world size) use them; a warning when the job's recipe, files or overrides do."""
        words = launch.command.words
        entry = next((index for index, word in enumerate(words) if word is launch.entry_word), 0)
        uses: dict = {}
        for index, word in enumerate(words):
            for name in sourced_names([word]):
                uses.setdefault(name.source, {}).setdefault(name.name, index > entry)
        for source, names in uses.items():
            if source in reported:
                continue
            reported.add(source)
            listed = ", ".join(f"${name}" for name in list(names)[:4]) + (
                f" and {len(names) - 4} more" if len(names) > 4 else "")
            severity = None if any(names.values()) else Severity.INFO
            self.finding("LA002", display, source.span, (
                f"the file this sources ({_clipped(source.file) or 'unnamed'}) is not read (mblint reads no sourced file), and "
                f"the launch at line {launch.line} uses {listed}, which it may set: what depends on "
                f"{'them' if len(names) > 1 else 'it'} is not checked; set the value in this script to have it "
                "checked"), result, severity=severity)

    def read_text(self, path: Path, limit: int, kind: str) -> str:
        """The text of a file the launch reader reads: inside the project and its search
        paths only (a committed link to a file outside is never opened, so never quoted)."""
        if not self.engine.confinement.allows(path):
            raise SourceError(path, OUTSIDE_PROJECT)
        return read_source(path, limit, kind)

    def check_launch(self, path: Path, display: str, launch: Launch, result: "FileResult") -> set[Path]:
        if launch.wrapped is not None:
            searched: set[Path] = set()  # the answer depends on every place looked at
            if self.trains(path, launch, searched):
                word, why = launch.wrapped
                self.finding("LA002", display, word.span, f"launch not checked: it runs through {why}; mblint reads "
                             "a launch only where the command runs with the script's arguments, files and "
                             "environment", result)
            return searched
        if launch.entry == "unread":
            reasons = "; ".join(message for _, message in launch.unanalysed)
            self.finding("LA002", display, launch.entry_word.span, f"launch not checked: {reasons}", result)
            return set()
        if launch.problems:
            for span, message in launch.problems:
                self.finding("LA001", display, span, message, result)
            return set()
        if launch.entry != "runner":
            return self.check_entry_script(path, display, launch, result)
        if launch.recipe is None or launch.unanalysed:
            reasons = "; ".join(message for _, message in launch.unanalysed) or "the recipe is not named"
            self.finding("LA002", display, launch.entry_word.span, f"launch not checked: {reasons}", result)
            return set()
        interp = self.engine.project.interpreter_for(path)
        line = interp.schema.line
        if line in ("0.3", "0.4", "0.5"):
            self.finding("LA002", display, launch.entry_word.span,
                         f"launch not checked: the run_recipe.py of Megatron-Bridge {line} (before the 0.6 runner) "
                         "is not modelled", result)
            return set()
        lookup = self.lookup(interp)
        searched: set[Path] = set()  # where the recipe's name was looked for
        found = lookup.find(launch.recipe, searched)
        span = launch.recipe_span or launch.entry_word.span
        if found is None:
            if lookup.readable:
                self.finding("LA001", display, span, f"Recipe '{launch.recipe}' not found in "
                             "megatron.bridge.recipes or megatron.bridge.perf_recipes", result)
            else:
                self.finding("LA002", display, span,
                             f"launch not checked: megatron.bridge.recipes could not be read to find "
                             f"'{launch.recipe}' (pass --search-path to a Megatron-Bridge source tree)", result)
            return searched
        recipe_path, function, kind = found
        return self.run(path, display, launch, recipe_path, function, kind, [], result) | searched

    def trains(self, path: Path, launch: Launch, searched: set[Path]) -> bool:
        """Whether ``launch`` is a training launch: Megatron-Bridge's runner, or an entry script
        mblint would analyse as one (a script that is not there is one only when the line
        passes it configuration arguments). ``searched`` gets the places looked at."""
        if launch.entry != "script":
            return True
        from mblint.readers.entry import entry_recipe

        entry = entry_recipe(self.engine, path, launch, searched)
        if isinstance(entry, str) and entry.startswith("entry script "):
            return bool(launch.settings or launch.config_files)
        return entry is not None

    def check_entry_script(self, path: Path, display: str, launch: Launch, result: "FileResult") -> set[Path]:
        from mblint.readers.entry import entry_recipe

        searched: set[Path] = set()  # the answer depends on every place looked at
        entry = entry_recipe(self.engine, path, launch, searched)
        if entry is None:
            return searched
        if isinstance(entry, str) and entry.startswith("entry script ") and not (launch.settings or launch.config_files):
            return searched  # a Python script that is not there, run without configuration arguments
        if isinstance(entry, str):
            self.finding("LA002", display, launch.entry_word.span, f"launch not checked: {entry}", result)
            return searched
        if not entry.applies_cli:
            launch.settings = []  # the script does not apply trailing KEY=VALUE arguments
        words = launch.command.words
        plain = words[-1] is launch.entry_word and entry.trainer is not None  # no argument: the script's plain run
        return self.run(path, display, launch, entry.recipe_path, entry.function, "script", entry.config_files,
                        result, kwargs=entry.kwargs, mutations=entry.mutations, script=entry.script,
                        plain_run_at=Span(*entry.trainer) if plain else None) | {entry.script} | searched

    def check_yaml_by_entry(self, path: Path, result: "FileResult", searched: set[Path]) -> set[Path] | None:
        """An override file no comment or setting pairs: paired by a training script beside it
        (or up to two folders above) that names it and loads it, run as it documents it
        (``--config-file <this file>``); None when no script pairs it. ``searched`` gets what
        the answer depends on, whatever it is: the folders searched, the scripts read, what
        the scripts naming the file import."""
        from mblint.readers.entry import analyse_entry
        from mblint.extract.shell import Command, Word
        from mblint.pairing import entry_scripts_naming

        texts = self.__dict__.setdefault("_texts", {})
        target = path.resolve()
        for script in entry_scripts_naming(path, texts, self.engine.confinement.allows, searched):
            entry = analyse_entry(self.engine, script, [], config_file=target, searched=searched)
            if self.engine.options.use_cache:  # the script's imports only key the cache
                searched |= self.engine.dependencies(script)
            if entry is None or isinstance(entry, str):
                continue
            if target not in {p.resolve() for p in entry.config_files}:
                continue
            display = self.engine.project_display(path)
            start = Span(1, 1, 1, 2)
            launch = Launch(Command([], start), "script", Word(None, start), script=str(script))
            result.notes.append(f"{display}: paired with {entry.function} by {self.engine.project_display(script)}, "
                                "which loads it")
            return self.run(path, display, launch, entry.recipe_path, entry.function, "script",
                            [target], result, kwargs=entry.kwargs, mutations=entry.mutations,
                            script=entry.script) | {script.resolve()}
        return None

    def check_yaml_commands(self, path: Path, result: "FileResult") -> set[Path] | None:
        """``command:`` entries of a YAML file (Megatron-Bridge's model verification cards)
        that run the runner, ``train.sh`` or the torch launcher: each is checked as a launch
        line, its findings on the tokens of the entry; None when the file holds none."""
        from mblint.overrides import load_yaml

        try:
            document = load_yaml(path)
        except SourceError:
            return None
        return self.check_commands_in(path, document, result)

    def check_commands_in(self, path: Path, document: Any, result: "FileResult") -> set[Path] | None:
        """``check_yaml_commands`` of the YAML file ``path`` already loaded as ``document``."""
        entries = _command_entries(document)
        first = next(entries, None)
        if first is None:
            return None
        text = self.read_text(path, MAX_SCRIPT_BYTES, "a YAML file")
        starts = _line_starts(text)
        display = self.engine.project_display(path)
        deps: set[Path] = set()
        budget = MAX_SCRIPT_BYTES  # characters of commands read, all entries together (an alias repeats one)
        for count, (line, column, command) in enumerate(itertools.chain([first], entries)):
            budget -= len(command)
            if budget < 0 or count == MAX_YAML_COMMANDS:
                limit = (f"command limit ({MAX_SCRIPT_BYTES:,} characters of command: entries per file)" if budget < 0
                         else f"command limit ({MAX_YAML_COMMANDS:,} command: entries per file)")
                self.engine.syntax_finding(SourceLimit(path, f"{limit} reached: this entry and the ones after it are "
                                                             "not checked", line + 1, column + 1), result)
                break
            cursor = starts[min(line, len(starts) - 1)] + column
            script = parse_script(str(command), str(path.resolve().parent))
            for script_line, script_column, message in script.limits:
                self.engine.syntax_finding(SourceLimit(path, message, line + 1, column + 1), result)
            for _, _, message in script.errors[:1]:
                self.finding("LA002", display, Span(line + 1, column + 1, line + 1, column + 2),
                             f"{message} in this command: bash stops at a syntax error, and a launch line mblint cannot "
                             "read is not checked", result)
            for parsed in script.commands:
                cursor = _place_words(parsed, text, starts, cursor)
                _place_environment(parsed)
            for launch in find_launches(script.commands, []):
                deps |= self.check_launch(path, display, launch, result)
        return deps

    def lookup(self, interp: Any):
        from mblint.pairing import RecipeLookup

        key = id(interp)
        if key not in self._lookups:
            self._lookups[key] = (interp, RecipeLookup(interp))
        return self._lookups[key][1]

    # ----- the configuration -------------------------------------------------------------

    def run(self, path: Path, display: str, launch: Launch, recipe_path: Path, function: str, kind: str,
            yaml_files: list[Path], result: "FileResult", kwargs: dict | None = None,
            mutations: list | None = None, script: Path | None = None, about: str = "",
            world: tuple[int | None, str] | None = None, not_checked: Any = None,
            plain_run_at: Span | None = None) -> set[Path]:
        """``mutations``: (field path, value, span) the training script ``script`` assigns on
        the recipe's result before the overrides (an unknown value makes the field unknown),
        placed on the script's lines when it is in the project (a file of the job, like the
        recipe's). ``about``: what the job is called on its findings elsewhere (default: the
        launch line's); ``world``: the world size the job runs at and its source, when the
        launch does not decide it; ``not_checked(reason)``: says that the job could not be
        checked (default: LA002 on the launch line). ``plain_run_at``: the script's trainer call,
        when the launch runs the script with no argument, its plain run: a finding the job has
        through values set elsewhere lands there, where linting the script puts it, unless it
        read the launch's world size."""
        from mblint.pairing import recipe_kwargs

        engine = self.engine
        project = engine.project
        interp = project.interpreter_for(recipe_path)
        kwargs = dict(kwargs or {})
        if kind != "script":
            func = interp.scope_for(recipe_path).lookup(function)
            peft = launch.mode if launch.mode in ("lora", "dora") else None
            kwargs = recipe_kwargs(func.node, peft)
            if kwargs is None:
                self.finding("LA001", display, launch.mode_span or launch.entry_word.span,
                             f"Recipe '{function}' does not accept a configurable PEFT scheme; --mode {peft} is "
                             "unsupported.", result)
                return set()
        script_display = engine.project_display(script) if script is not None else ""
        own_script = script_display if script_display and in_project(script_display) else ""
        launch_files = frozenset({display} | {engine.project_display(p) for p in yaml_files}
                                 | ({own_script} if own_script else set()))
        where = self.origin(display, launch.entry_word.span)
        shared_place = self.origin(own_script, plain_run_at) if own_script and plain_run_at else None
        decides = launch.world_size is not None or launch.world_unknown is not None  # else the recipe's guess
        unknown_at = self.origin(display, launch.world_unknown) if launch.world_size is None and decides else None
        world_size, world_source = (launch.world_size, "launch" if decides else "") if world is None else world
        steps = LaunchSteps(self, display, launch, kind, mutations or [], own_script)
        job = Job(launch_files, world_size, world_source, where,
                  about or f"the job launched at {display}:{launch.line}", unknown_at, recipe_path, function,
                  tuple(yaml_files), tuple(setting.item for setting in launch.settings), tuple(kwargs.items()), steps,
                  self.environment(display, launch))
        try:
            graph = engine.job_graph(job)
            baseline = engine.job_graph(job)
        except SourceError as error:
            engine.syntax_finding(error, result)
            return set()
        except LookupError:
            result.errors.append(_error(display, launch, f"recipe function {function!r} not found"))
            return set()
        deps = {recipe_path.resolve()} | engine.dependencies(recipe_path)
        if graph is None or baseline is None:
            reason = f"{function} does not build a ConfigContainer mblint can follow"
            if not_checked is not None:
                not_checked(reason)
            else:
                self.finding("LA002", display, launch.entry_word.span, f"launch not checked: {reason}", result)
            return deps
        result.recipes += 1
        deps |= {yaml_path.resolve() for yaml_path in yaml_files}
        cfg = engine.configure(graph, job, result, lambda error: self.finding(
            "LA001", display, launch.entry_word.span, f"override not understood: {error}", result))
        if cfg is None:
            return deps
        command_line = steps.command_line
        cfg.overrides_applied = True  # the configuration being launched, not a recipe still to complete
        cfg.command_line_origins = frozenset(o.origin for o in command_line)
        if self.collected is not None:
            self.collected.append((launch, cfg))
            return deps
        alone = baseline.build()
        text = interp.finder.load(recipe_path).mblint_text
        start = len(result.findings)
        world_readers = engine.run_rules(cfg, text, result, job)
        findings = result.findings[start:]
        del result.findings[start:]
        if launch.world_size is None:
            world_readers = set()  # no world size to relate: the gap is said where it is unknown (LA002, CV003)
        self.relate_world_size(findings, world_readers, launch, display)
        own = {_what_it_says(f): f for f in self.recipe_findings(alone, text, launch_files | {cfg.recipe.path})}
        findings = self.beyond_unknown_arguments(cfg, launch, command_line, findings, display, result)
        kept = []
        for finding in findings:
            if finding.location.path in launch_files:
                pass  # on the launch's own words
            elif _what_it_says(finding) in own:  # the recipe's own problem, in this job too: where linting the recipe puts it
                finding = in_project_place(own.pop(_what_it_says(finding)), job)
            else:
                self.relocate(finding, display, launch, finding.rule_id in world_readers, shared_place)
            finding.fixes = ()  # no writer edits a launch script yet
            kept.append(finding)
        name_the_job(kept, where, job.about)
        result.findings.extend(kept)
        return deps

    def beyond_unknown_arguments(self, cfg, launch: Launch, command_line: list, findings: list, display: str,
                                 result: "FileResult") -> list:
        """An argument whose text is unknown may be any overrides: a finding stands only when
        every field it reads was set by an override written after the last such argument
        (Hydra applies overrides in order; the last one wins). The others are not reported,
        and that is said (LA002)."""
        if not launch.unknown_overrides:
            return findings
        span, written_before = launch.unknown_overrides[-1]
        trailing = [o for o, s in zip(command_line, launch.settings) if not s.flag]
        after = {o.origin.seq for o in trailing[written_before:]}
        gaps = coverage_rule_ids(self.engine.rule_run.rules)  # where analysis stopped, whatever the argument sets
        kept = []
        for finding in findings:
            # a rejected key is in no field: its place is the finding's own location
            lasts = [cfg.last_origin(path) or finding.location for path in finding.fields]
            if finding.rule_id in gaps or (finding.fields and all(o is not None and o.seq in after for o in lasts)):
                kept.append(finding)
        dropped = len(findings) - len(kept)
        if dropped:
            self.finding("LA002", display, span,
                         f"{dropped} finding(s) on this launch not reported: this argument's value is unknown and "
                         "may override the fields they read", result)
        return kept

    def overrides(self, display: str, settings: list[Setting]) -> list:
        from mblint.overrides import Override, _next_seq, parse_dotlist

        made = []
        for setting in settings:
            origin = self.origin(display, setting.span, kind="override", seq=_next_seq())
            if setting.unknown:
                path = tuple(setting.item.rstrip("=").split("."))
                made.append(Override(path, UNKNOWN, origin, "force", setting.item))
            else:
                made.append(parse_dotlist(setting.item, origin))
        return made

    def relate_world_size(self, findings: list[Finding], readers: set[str], launch: Launch, display: str) -> None:
        """The launch's world size, related to the findings of the rules that read it."""
        for finding in findings:
            if finding.rule_id in readers:
                where = self.origin(display, launch.world_spans[0])
                finding.related = finding.related + (Related(where, f"world size {launch.world_size} = "
                                                                    f"{launch.world_text} (from this launch)"),)

    def recipe_findings(self, cfg, text: str, job_files: frozenset[str]) -> list[Finding]:
        """The findings the recipe has alone, at its own world size, placed as in the job: a
        comparison, not a job of its own."""
        engine = self.engine
        world, source = engine.world_size_for(cfg, text)
        findings: list[Finding] = []
        engine.rule_run.run(cfg, world, source, engine.editable_frozen() | job_files, findings, [])
        return findings

    def environment(self, display: str, launch: Launch) -> LaunchEnvironment:
        """The launch's environment variables as the job's, each placed where the script set it."""
        shell = launch.environment
        fallback = launch.command.span
        if shell.unknown:
            return LaunchEnvironment((), self.origin(display, shell.open_at or fallback, kind="set"))
        opened = shell.open_at is not None
        # a variable whose place is unknown after ``source`` is unknown from there (``open_at``)
        variables = tuple((name, UNKNOWN if variable.value is None else variable.value,
                           self.origin(display, variable.span or fallback, kind="set"))
                          for name, variable in shell.variables.items() if variable.span is not None or not opened)
        open_at = self.origin(display, shell.open_at, kind="set") if opened else None
        return LaunchEnvironment(variables, open_at)

    def relocate(self, finding: Finding, display: str, launch: Launch, by_world_size: bool,
                 shared_place: Origin | None = None) -> None:
        """A finding the launch causes (its world size, its runner) whose fields were set
        elsewhere: reported on the launch line (on the world size when the rule read it; else on
        ``shared_place``, the trainer call of a script the launch runs as its plain run), the
        field's place related."""
        old = finding.location
        finding.related = (Related(old, "the value is set here"),) + finding.related
        if shared_place is not None and not by_world_size:
            finding.location = shared_place
            return
        span = launch.world_spans[0] if by_world_size else launch.entry_word.span
        finding.location = self.origin(display, span)

    # ----- helpers -----------------------------------------------------------------------

    def origin(self, display: str, span: Span | None, kind: str = "override", seq: int = 0) -> Origin:
        span = span or Span(1, 1, 1, 2)
        return Origin(display, span.line, span.column, span.end_line, span.end_column, kind, seq)

    def finding(self, rule_id: str, display: str, span: Span, message: str, result: "FileResult",
                severity: Severity | None = None) -> None:
        self.engine.report_at(rule_id, self.origin(display, span), message, result, severity=severity)


class LaunchSteps:
    """What a launch line does to its recipe's configuration around the overrides (a
    ``readers.Launcher``): a training script's own assignments and ``--dataset`` before them;
    the line's ``key=value`` words, with their places; Megatron-Bridge's runner's defaults (a
    benchmark recipe's) and synchronisations after them."""

    def __init__(self, reader: LaunchReader, display: str, launch: Launch, kind: str, mutations: list,
                 script: str = "") -> None:
        self.reader, self.display, self.launch, self.kind, self.mutations = reader, display, launch, kind, mutations
        self.script = script  # the training script's display path, when its lines can be shown
        self.origin = reader.origin(display, launch.entry_word.span)
        self.command_line: list = []  # the overrides applied, once they are

    def before(self, graph: Any) -> None:
        for field_path, value, span in self.mutations:
            origin = self.reader.origin(self.script, Span(*span)) if self.script else self.origin
            _force(graph, ".".join(field_path), value if value is not _entry_unknown() else UNKNOWN, origin)
        if self.launch.dataset is not None:  # --dataset: the preset replaces the recipe's dataset
            _force(graph, "dataset", UNKNOWN, self.reader.origin(self.display, self.launch.dataset_span))

    def overrides(self) -> list:
        self.command_line = self.reader.overrides(self.display, self.launch.settings)
        return self.command_line

    def after(self, graph: Any) -> None:
        if self.launch.entry != "runner":
            return
        explicit = {o.path for o in self.command_line}
        if self.kind == "benchmark":
            benchmark_defaults(graph, explicit, self.launch.mode, self.origin)
        runner_syncs(graph, explicit, self.launch.mode, self.origin)


def launch_configuration(engine: "Services", path: Path, line: int) -> tuple:
    """(launch, configuration) of the launch line at ``line`` of a launch script or of a YAML
    file's ``command:`` entry; (None, reason) when there is none to show."""
    from mblint.discover import YAML_SUFFIXES
    from mblint.results import FileResult

    checker = LaunchReader(engine)
    checker.collected = []
    result = FileResult()
    engine.display_root = Path.cwd()
    if path.suffix in YAML_SUFFIXES:
        checker.check_yaml_commands(path, result)
    else:
        checker.read(path, result)
    for launch, cfg in checker.collected:
        span, called_at = launch.command.span, launch.command.called_at
        if span.line <= line <= max(span.end_line, launch.line) or called_at and called_at.line <= line <= called_at.end_line:
            return launch, cfg
    reasons = [f.message for f in result.findings if f.location.line <= line] + [e.message for e in result.errors]
    return None, reasons[-1] if reasons else f"no launch line mblint can read at line {line}"


# Builtins that print, assign or test their arguments (a sourced file does not redefine them).
SHELL_BUILTINS = frozenset({"echo", "printf", "export", "declare", "local", "readonly", "typeset", "set", "unset",
                            "cd", "test", "[", "[[", ":", "true", "false", "read", "shift", "return", "exit"})
_OVERRIDE = re.compile(r"[A-Za-z_]\w*(\.\w+)+=")


def _launch_argument(text: str | None) -> bool:
    """What only a launch passes: a recipe, an override file, a dotted KEY=VALUE override."""
    return text is not None and (text.split("=", 1)[0] in ("--recipe", "--config-file", "--config_file")
                                 or bool(_OVERRIDE.match(text)))


def _clipped(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def _entry_unknown():
    from mblint.readers.entry import UNKNOWN as ENTRY_UNKNOWN

    return ENTRY_UNKNOWN


def _what_it_says(finding: Finding) -> tuple:
    """What a finding says, wherever it is placed."""
    return (finding.rule_id, finding.fields, finding.message)


def _error(display: str, launch: Launch, message: str):
    from mblint.results import FileError

    return FileError(display, message, launch.line, launch.entry_word.span.column)


# ----- what the runner does after the overrides -----------------------------------------------


def _force(graph, path: str, value: Any, origin: Origin) -> None:
    from mblint.overrides import Override, apply_one

    apply_one(graph, Override(tuple(path.split(".")), value, origin, "force"))


def _get(graph, path: str) -> Any:
    """The value at ``path`` in the graph; UNKNOWN when unknown, ``None`` when the field or an
    object on the way is missing or None."""
    from mblint.extract.values import _MISSING, Obj
    from mblint.model import Unknown

    node: Any = graph.root
    for part in path.split("."):
        if isinstance(node, Unknown):
            return UNKNOWN
        if not isinstance(node, Obj):
            return None
        value = node.get(part)
        if isinstance(value, Unknown):
            return UNKNOWN
        node = None if value is _MISSING else value
    return node


def _has_field(graph, path: str, name: str) -> bool | None:
    from mblint.extract.values import Obj

    owner = _get(graph, path)
    if owner is UNKNOWN:
        return None
    if not isinstance(owner, Obj):
        return False
    if owner.open:
        return None if name not in owner.fields else True
    return name in owner.fields or (owner.cls is not None and name in owner.cls.fields)


def runner_syncs(graph, explicit: set, mode: str | None, origin: Origin) -> None:
    """scripts/training/run_recipe.py (0.6.0 and later) after the overrides:
    ``sync_model_pipeline_layout``, then ``sync_finetuning_cp_invariants``,
    ``sync_offline_packing_alignment``, ``sync_model_dataset_sequence_length``
    (scripts/training/recipe_runner.py)."""
    _sync_pipeline_layout(graph, explicit, origin)
    if mode in ("sft", "lora", "dora"):
        _sync_finetuning_cp(graph, origin)
    _sync_offline_packing(graph, origin)
    _sync_sequence_length(graph, origin)


def _sync_pipeline_layout(graph, explicit: set, origin: Origin) -> None:
    keys = {".".join(path) for path in explicit}
    if not keys & {"model.pipeline_model_parallel_size", "model.virtual_pipeline_model_parallel_size"}:
        return
    if "model.pipeline_model_parallel_layout" in keys:
        return
    builder = _get(graph, "model._pipeline_model_parallel_layout_builder")
    if builder is not None:
        _force(graph, "model.pipeline_model_parallel_layout", UNKNOWN, origin)  # rebuilt by the recipe's builder
        return
    for name in ("num_layers_in_first_pipeline_stage", "num_layers_in_last_pipeline_stage"):
        if _get(graph, f"model.{name}") is not None and f"model.{name}" not in keys:
            _force(graph, f"model.{name}", UNKNOWN, origin)  # may be cleared, depending on num_layers


def _context_sizes(graph) -> list:
    sizes = [_get(graph, "model.context_parallel_size")]
    eval_size = _get(graph, "dist.eval_context_parallel_size")
    if eval_size is not None:
        sizes.append(eval_size)
    return [1 if size is None else size for size in sizes]


def _sync_finetuning_cp(graph, origin: Origin) -> None:
    offline = _has_field(graph, "dataset", "enable_offline_packing")
    inbatch = _has_field(graph, "dataset", "enable_in_batch_packing")
    if offline is False and inbatch is False:
        return
    sizes = _context_sizes(graph)
    if offline is None and inbatch is None or any(s is UNKNOWN or not isinstance(s, int) for s in sizes):
        decided = None
    else:
        decided = any(s > 1 for s in sizes)
    if decided is False:
        return
    for path, value in (("model.calculate_per_token_loss", True), ("ddp.average_in_collective", False)):
        if _get(graph, path.rsplit(".", 1)[0]) is None:
            continue
        _force(graph, path, value if decided else UNKNOWN, origin)


def _sync_offline_packing(graph, origin: Origin) -> None:
    from mblint.extract.values import Obj

    flag = _get(graph, "dataset.enable_offline_packing")
    if flag is None or flag is False:
        return
    if flag is UNKNOWN or flag is not True:
        for name in ("packed_sequence_size", "pad_seq_to_mult"):
            if isinstance(_get(graph, "dataset.offline_packing_specs"), Obj):
                _force(graph, f"dataset.offline_packing_specs.{name}", UNKNOWN, origin)
        return
    specs = _get(graph, "dataset.offline_packing_specs")
    if specs is UNKNOWN:
        return
    if not isinstance(specs, Obj):
        _force(graph, "dataset.offline_packing_specs", {"_target_": "PackedSequenceSpecs"}, origin)
    seq_length = _get(graph, "dataset.seq_length")
    if seq_length is not None:
        _force(graph, "dataset.offline_packing_specs.packed_sequence_size", seq_length, origin)
    tp = _get(graph, "model.tensor_model_parallel_size")
    sp = _get(graph, "model.sequence_parallel")
    pad = _get(graph, "dataset.offline_packing_specs.pad_seq_to_mult")
    sizes = _context_sizes(graph)
    values = sizes + [1 if tp is None else tp, pad or 1]
    if sp is UNKNOWN or any(not isinstance(v, int) or isinstance(v, bool) for v in values):
        _force(graph, "dataset.offline_packing_specs.pad_seq_to_mult", UNKNOWN, origin)
        return
    tp = 1 if tp is None else tp
    cp_multiples = [2 * size if size > 1 else 1 for size in sizes]
    sp_multiples = [size * tp if sp and tp > 1 else 1 for size in sizes]
    aligned = math.lcm(pad or 1, *cp_multiples, *sp_multiples)
    if aligned != pad:
        _force(graph, "dataset.offline_packing_specs.pad_seq_to_mult", aligned, origin)


def _sync_sequence_length(graph, origin: Origin) -> None:
    if _get(graph, "dataset") is None or _has_field(graph, "model", "seq_length") is False:
        return
    value = _get(graph, "dataset.seq_length")
    if value is None:
        value = _get(graph, "dataset.sequence_length")
    if value is None:
        return
    if value is UNKNOWN or _get(graph, "model.seq_length") != value:
        _force(graph, "model.seq_length", value, origin)


def benchmark_defaults(graph, explicit: set, mode: str | None, origin: Origin) -> None:
    """A benchmark recipe (``megatron.bridge.perf_recipes``) through run_recipe.py: the global
    batch is weak-scaled to the world size unless the command line sets it, and text
    finetuning benchmarks get a mock dataset (run_recipe.py ``_apply_benchmark_*``): those
    values are not known here."""
    keys = {".".join(path) for path in explicit}
    if not keys & {"train", "train.global_batch_size"}:
        _force(graph, "train.global_batch_size", UNKNOWN, origin)
    if not keys & {"optimizer", "optimizer.use_precision_aware_optimizer"}:
        _force(graph, "optimizer.use_precision_aware_optimizer", UNKNOWN, origin)
    if mode in ("sft", "lora", "dora"):
        _force(graph, "dataset", UNKNOWN, origin)


# ----- launch lines inside YAML (verification cards) ---------------------------------------------

MAX_YAML_COMMANDS = 1_000
LAUNCHERS = ("run_recipe.py", "train.sh", "setup_experiment.py", "torchrun", "torch.distributed.run")


def _command_entries(document: Any, depth: int = 0):
    """(0-based line, column, text) of every ``command:`` string value that starts a launcher."""
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    if depth > 64:
        return
    if isinstance(document, CommentedMap):
        for key, value in document.items():
            if key == "command" and isinstance(value, str) and any(word in value for word in LAUNCHERS):
                line, column = document.lc.value(key)
                yield line, column, value
            elif isinstance(value, (CommentedMap, CommentedSeq)):
                yield from _command_entries(value, depth + 1)
    elif isinstance(document, CommentedSeq):
        for item in document:
            yield from _command_entries(item, depth + 1)


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for index, char in enumerate(text):
        if char == "\n":
            starts.append(index + 1)
    return starts


def _place_environment(command: Any) -> None:
    """The variables a ``command:`` entry sets in front of its command, placed on the entry
    (their places in the command's text are not the YAML file's)."""
    from mblint.extract.shell import Exported

    environment = command.environment
    environment.variables = {name: Exported(variable.value, command.span)
                             for name, variable in environment.variables.items()}
    if environment.open_at is not None:
        environment.open_at = command.span


def _place_words(command: Any, text: str, starts: list[int], cursor: int) -> int:
    """Each word's place in the YAML file: the next occurrence of its text after the previous
    word (a folded or plain scalar keeps the words' text as written; quotes around them are
    the shell's). Words not found keep the entry's start."""
    import bisect

    from mblint.extract.shell import Span

    def span_at(offset: int, length: int) -> Span:
        row = bisect.bisect_right(starts, offset) - 1
        column = offset - starts[row] + 1
        return Span(row + 1, column, row + 1, column + length)

    fallback = span_at(cursor, 1)
    for word in command.words:
        where = text.find(word.text, cursor) if word.text else -1
        if where < 0 or "\n" in (word.text or ""):
            word.span = fallback
            continue
        word.span = span_at(where, len(word.text))
        cursor = where + len(word.text)
    if command.words:
        first, last = command.words[0].span, command.words[-1].span
        command.span = Span(first.line, first.column, last.end_line, last.end_column)
    else:
        command.span = fallback
    return cursor
