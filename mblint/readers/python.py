"""Python modules: each recipe function a module defines is a job (the recipe alone, with the
run's ``--set`` items). Also reported here: what the module's recipes leave unchecked (code
after a return, builders only the ``__main__`` block calls, interpreter limits)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import TYPE_CHECKING

from mblint.coverage import callable_without_arguments, unnamed_builders, unreadable_imports
from mblint.extract.modules import SourceError
from mblint.model import Origin
from mblint.readers import Job

if TYPE_CHECKING:
    from mblint.readers import Services
    from mblint.results import FileResult

# statements holding blocks of the same code (a nested def or class is code of its own)
_BLOCK_STATEMENTS = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.With, ast.AsyncWith, ast.Try,
                     *([ast.TryStar] if hasattr(ast, "TryStar") else []))


def unreachable_statements(function: ast.FunctionDef) -> list[ast.stmt]:
    """The first statement after a ``return``/``raise`` in each block of ``function`` (nested
    functions and classes are their own code and are not entered)."""
    found: list[ast.stmt] = []
    blocks = [function.body]
    while blocks:
        block = blocks.pop()
        for index, stmt in enumerate(block):
            if isinstance(stmt, (ast.Return, ast.Raise)) and index + 1 < len(block):
                found.append(block[index + 1])
                break
            if isinstance(stmt, _BLOCK_STATEMENTS):
                blocks.extend(inner for inner in (stmt.body, getattr(stmt, "orelse", None),
                                                  getattr(stmt, "finalbody", None)) if inner)
                blocks.extend(handler.body for handler in getattr(stmt, "handlers", ()))
    return sorted(found, key=lambda stmt: (stmt.lineno, stmt.col_offset))


class PythonReader:
    def __init__(self, engine: "Services") -> None:
        self.engine = engine

    def read(self, path: Path, report: "FileResult") -> set[Path]:
        engine = self.engine
        run_reads = self.check_python(path, report)
        return engine.dependencies(path) | run_reads if engine.options.use_cache else set()  # they only key the cache

    def check_python(self, path: Path, report: "FileResult") -> set[Path]:
        """Check the module's jobs; the files its plain run's job read besides the module's
        own imports (the recipe's module, its override file)."""
        engine = self.engine
        engine.enter_file(path)
        try:
            functions = engine.project.recipe_functions(path)
        except SourceError as error:
            engine.syntax_finding(error, report)
            return set()
        from mblint.extract.limits import MAX_FILE_STEPS, MAX_RECIPES_PER_FILE

        interp = engine.project.interpreter_for(path)
        text = interp.finder.load(path).mblint_text
        report.schemas.append(engine.project.schema_record(path))
        if engine.options.recipe_function:
            report.recipes += 1
            engine.check_job(Job(recipe=path, function=engine.options.recipe_function, overrides=engine.options.dotlist),
                             text, report)
            return set()
        steps = 0
        analysed: set[str] = set()
        for index, node in enumerate(functions):
            if index == MAX_RECIPES_PER_FILE or steps > MAX_FILE_STEPS:
                limit = (f"recipe limit ({MAX_RECIPES_PER_FILE} per file)" if index == MAX_RECIPES_PER_FILE
                         else f"step limit ({MAX_FILE_STEPS:,} steps per file)")
                limit_finding(engine, path, node, f"{limit} reached: {len(functions) - index} recipes from "
                                                  f"{node.name} on are not checked", report)
                return set()
            report.recipes += 1
            self.report_unreachable(path, node, report)
            if engine.check_job(Job(recipe=path, function=node.name, overrides=engine.options.dotlist),
                                text, report) is not None:
                analysed.add(node.name)
            steps += interp.steps
        for node in unnamed_builders(interp.finder.load(path).tree, functions):
            if self.builds_a_configuration(path, node.name):
                report.recipes += 1
                engine.check_job(Job(recipe=path, function=node.name, overrides=engine.options.dotlist), text, report)
                analysed.add(node.name)
        run_reads = self.check_plain_run(path, text, report)
        if run_reads is None:  # else the plain run is the `__main__` block's, checked or said not to be
            self.report_main_only_calls(path, analysed, report)
        for error in unreadable_imports(interp, path):  # their names are unknown to the recipes
            engine.syntax_finding(error, report)
        return run_reads or set()

    def check_plain_run(self, path: Path, text: str, report: "FileResult") -> set[Path] | None:
        """A training script (it calls Megatron-Bridge's ``pretrain``, ``finetune``...) is the
        job its plain run makes (``python SCRIPT``: no argument), checked as a launch line running
        it is (``LaunchReader.run``), at the world size the script states (its settings or
        ``# mblint: world-size=N``; else unknown), its findings on the script's lines; what
        cannot be known is SY005 at the trainer call. The files the job read; None when the
        module is no training script."""
        from mblint.readers.entry import plain_run

        engine = self.engine
        searched: set[Path] = set()  # where its override files were looked for, found or not
        try:
            found = plain_run(engine, path, searched)
        except SourceError as error:
            engine.syntax_finding(error, report)
            return set()
        if found is None:
            return None
        call, entry = found
        display = engine.project_display(path)
        run = f"`python {path.name}`"

        def not_checked(reason: str) -> None:
            width = call.end_col_offset - call.col_offset if call.end_lineno == call.lineno else len(call.func.id)
            engine.not_analysed_finding(path, call.lineno, call.col_offset + 1, width,
                                        f"the job {run} runs was not analysed: {reason}", report)

        if isinstance(entry, str):
            not_checked(entry)
            return searched
        from mblint.extract.launch import Launch  # the shell reader, only for a training script
        from mblint.extract.shell import Command, Span, Word

        span = Span(call.lineno, call.col_offset + 1, call.lineno, call.col_offset + 1 + len(call.func.id))
        launch = Launch(Command([], span), "script", Word(None, span), script=str(path))
        reads = engine.readers.launch.run(
            path, display, launch, entry.recipe_path, entry.function, "script", entry.config_files, report,
            kwargs=entry.kwargs, mutations=entry.mutations, script=entry.script,
            about=f"the job {run} runs (no arguments)", world=self.stated_world_size(path, text),
            not_checked=not_checked)
        return reads | {entry.script} | searched

    def stated_world_size(self, path: Path, text: str) -> tuple[int | None, str]:
        """The world size a training script's own run states: its settings' or its
        ``# mblint: world-size=N`` comment's; unknown otherwise (the launcher decides it)."""
        import re

        from mblint.world_size import COMMENT

        settings = self.engine.settings_for(path)
        if settings is not None and settings.world_size:
            return settings.world_size, "setting"
        match = re.search(COMMENT, text) if text else None
        return (int(match.group(1)), "comment") if match else (None, "script")

    def builds_a_configuration(self, path: Path, function: str) -> bool:
        try:
            return self.engine.project.resolve_graph(path, function) is not None
        except (SourceError, LookupError):
            return False

    def report_main_only_calls(self, path: Path, analysed: set[str], report: "FileResult") -> None:
        """SY005 at each call of a configuration builder that only the module's
        ``if __name__ == "__main__":`` block makes."""
        from mblint.unanalysed import main_only_calls, main_only_message

        engine = self.engine
        tree = engine.project.interpreter_for(path).finder.load(path).tree
        for found in main_only_calls(tree, analysed):
            call = found.call
            width = (call.end_col_offset - call.col_offset) if call.end_lineno == call.lineno else len(found.function)
            engine.not_analysed_finding(path, call.lineno, call.col_offset + 1, width, main_only_message(found), report)

    def report_unreachable(self, path: Path, node: ast.FunctionDef, report: "FileResult") -> None:
        """SY006 on the first statement after a return/raise in each block of a recipe function."""
        engine = self.engine
        if engine.rule_run.in_force("SY006") is None:
            return
        display = engine.project_display(path)
        for stmt in unreachable_statements(node):
            end_line = getattr(stmt, "end_lineno", None) or stmt.lineno
            end_column = (getattr(stmt, "end_col_offset", None) or stmt.col_offset) + 1
            origin = Origin(display, stmt.lineno, stmt.col_offset + 1, end_line, end_column)
            message = (f"{node.name}: this statement (and any after it in its block) follows a return or raise and "
                       f"never runs; what it sets is not part of the configuration")
            engine.report_at("SY006", origin, message, report, recipe=f"{display}::{node.name}")


def explain_unresolved(engine: "Services", path: Path, function: str, report: "FileResult") -> None:
    """SY005 on the ``def`` line of a recipe left unresolved because it uses an import
    mblint could not read (naming the import and how to provide it)."""
    from mblint.unanalysed import builds_config, unread_imports, unread_message

    node = function_node(engine, path, function)
    if node is None:
        return
    interp = engine.project.interpreter_for(path)
    tree = interp.finder.load(path).tree
    unread = unread_imports(tree, node, path, interp.finder, interp.schema)
    if unread:
        engine.not_analysed_finding(path, node.lineno, node.col_offset + 1, len(f"def {node.name}"),
                                    unread_message(function, unread), report, recipe=function)
    elif getattr(interp, "result_unknown", False) and builds_config(node) and may_return_a_configuration(node):
        explain_unknown_result(engine, path, node, interp.gaps, report)


def may_return_a_configuration(node: ast.FunctionDef) -> bool:
    """Callable without arguments (a function given the configuration, such as 0.5's
    ``apply_dataset_override(config, ...)``, returns what it was given: unknown alone), not
    annotated to return something else (a dataset config), and not always raising."""
    annotation = ast.unparse(node.returns) if node.returns is not None else "ConfigContainer"
    return (callable_without_arguments(node.args) and annotation.endswith("ConfigContainer")
            and not any(isinstance(stmt, ast.Raise) for stmt in node.body))


def explain_unknown_result(engine: "Services", path: Path, node: ast.FunctionDef, gaps: list,
                           report: "FileResult") -> None:
    """SY005 for a recipe whose result is unknown to mblint: at the first place in its file where
    the analysis stopped (a call it could not follow that received the configuration), else on
    its ``def`` line."""
    display = engine.project_display(path)
    stop = next((gap for gap in gaps if gap.origin is not None and gap.origin.path == display), None)
    message = f"{node.name} was not analysed: the configuration it returns is unknown to mblint"
    if stop is None:
        engine.not_analysed_finding(path, node.lineno, node.col_offset + 1, len(f"def {node.name}"), message,
                                    report, recipe=node.name)
        return
    where = stop.origin
    source = f" ({stop.source})" if stop.source else ""
    width = where.end_column - where.column if where.end_line == where.line else len(stop.subject)
    engine.not_analysed_finding(path, where.line, where.column, width, (
        f"{message} after {stop.subject}, which receives {stop.part} and which mblint cannot follow{source}; "
        "set the configuration in the recipe itself, or give mblint the module the call comes from"),
        report, recipe=node.name)


def report_limits(engine: "Services", limits: list[str], path: Path, function: str, report: "FileResult") -> None:
    """One SY002 per recipe that hit a limit, on its ``def`` line, naming the first limit."""
    if not limits:
        return
    node = function_node(engine, path, function)
    more = f" (and {len(limits) - 1} more)" if len(limits) > 1 else ""
    limit_finding(engine, path, node, f"{function}: {limits[0]}{more}", report, recipe=function)


def limit_finding(engine: "Services", path: Path, node, message: str, report: "FileResult",
                  recipe: str | None = None) -> None:
    display = engine.project_display(path)
    line, column = (node.lineno, node.col_offset + 1) if node is not None else (1, 1)
    end = column + len(f"def {node.name}") if node is not None else column + 1
    origin = Origin(display, line, column, line, end)
    engine.report_at("SY002", origin, message, report, recipe=f"{display}::{recipe}" if recipe else "")


def function_node(engine: "Services", path: Path, function: str):
    try:
        tree = engine.project.interpreter_for(path).finder.load(path).tree
    except SourceError:
        return None
    return next((n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == function), None)
