"""The command line. Exit codes: 0 clean, 1 findings at or above the failing severity,
2 usage or internal error."""

from __future__ import annotations

import gc
import json
import os
import re
import sys
from pathlib import Path

import click

from mblint import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
# "full" is ruff's name for the text format; "concise" is one line a finding.
FORMATS = ["text", "full", "concise", "json", "sarif", "github"]
ARGS = "mblint.args"  # click.Context.meta key of the command's arguments as given


class _ReadablePath(click.Path):
    """``click.Path()``, which stats a path and then asks whether it is readable: a path
    that is readable passes with the one question (what ``click.Path`` accepts and returns
    is unchanged; every other path gets its checks and messages)."""

    def __init__(self) -> None:
        super().__init__()  # the default checks only: any path, readable if it exists

    def convert(self, value, param, ctx):
        if isinstance(value, str) and os.access(value, os.R_OK):
            return value
        return super().convert(value, param, ctx)


class DefaultToCheck(click.Group):
    """``mblint PATHS`` means ``mblint check PATHS``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        ctx.meta[ARGS] = list(args)  # as given: what keys a check run's run-level result
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
            args = ["check", *args]
        return super().parse_args(ctx, args)


def _print_version(ctx: click.Context, _param, value: bool) -> None:
    """``mblint --version``: mblint's version and the Megatron-Bridge releases whose schemas it bundles."""
    if not value or ctx.resilient_parsing:
        return
    from mblint.schema import bundled_releases

    releases = bundled_releases()
    cores = [release["megatron_core_version"] for release in releases.values()]
    click.echo(f"mblint {__version__}\nBundled Megatron-Bridge schemas: {', '.join(releases)} "
               f"(Megatron-Core {cores[0]} to {cores[-1]})")
    ctx.exit()


@click.group(cls=DefaultToCheck, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and the bundled Megatron-Bridge schemas, and exit.")
def main() -> None:
    """mblint: a static linter for Megatron-Bridge training configurations."""


@main.command()
@click.argument("paths", nargs=-1, type=_ReadablePath())
@click.option("--select", multiple=True, help="Rule ids, prefixes or names to enable (comma-separated or repeated).")
@click.option("--extend-select", multiple=True, help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Rule ids, prefixes or names to disable.")
@click.option("--format", "--output-format", "output_format", type=click.Choice(FORMATS), default=None,
              help="Output format (default text; github when GITHUB_ACTIONS=true); concise: one line a finding; "
                   "full: text.")
@click.option("--world-size", type=click.IntRange(min=1), default=None, help="GPUs the job runs on.")
@click.option("--megatron-bridge-version", "version", default=None,
              help="Megatron-Bridge version the files are for (e.g. 0.5.1) [setting megatron-bridge-version; default: "
                   "the version of the Megatron-Bridge source at hand].")
@click.option("--schema-source", type=click.Choice(["auto", "bundled"]), default="auto",
              help="auto: derive the schema from a Megatron-Bridge source beside the files, on search-paths or "
                   "installed, else use the bundled release; bundled: always the bundled release.")
@click.option("--search-path", "search_paths", multiple=True, type=click.Path(file_okay=False), help="Extra import root.")
@click.option("--recipe", default=None, help="PATH_OR_MODULE::FUNCTION that YAML files given here override.")
@click.option("--set", "dotlist", multiple=True, help="A key=value override applied after YAML files.")
@click.option("--fail-on", type=click.Choice(["error", "warning", "info"]), default=None,
              help="Lowest severity that makes the exit code 1 [setting fail-on; default: warning].")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the result cache (.mblint_cache).")
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="MBLINT_CACHE_DIR", default=None,
              help="Keep the result cache in DIR instead of .mblint_cache at the project root [env MBLINT_CACHE_DIR].")
@click.option("--jobs", "-j", type=click.IntRange(min=1), default=None, help="Worker processes (default: by amount of work).")
@click.option("--output-sarif", type=click.Path(dir_okay=False), default=None, help="Also write SARIF to FILE.")
@click.option("--output-json", type=click.Path(dir_okay=False), default=None, help="Also write JSON to FILE.")
@click.option("--output-file", "output_files", multiple=True, metavar="FORMAT=FILE",
              help="Also write FORMAT (text, json, sarif, github) to FILE; repeatable.")
@click.option("--baseline", type=click.Path(dir_okay=False, exists=True), default=None,
              help="Leave out the findings recorded in this baseline file.")
@click.option("--write-baseline", type=click.Path(dir_okay=False), default=None,
              help="Record the current findings in FILE (after suppressions) and exit 0.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="Use this settings file (mblint.toml or pyproject.toml) for every file.")
@click.option("--isolated", is_flag=True, help="Ignore settings files.")
@click.option("--force-exclude/--no-force-exclude", default=True, show_default=True,
              help="Apply excludes to files passed explicitly (as pre-commit does).")
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--unsafe-fixes", is_flag=True,
              help="Let --fix and --diff also apply unsafe fixes; alone it changes nothing (as in ruff).")
@click.option("--diff", is_flag=True, help="Print the fixes as a unified diff; write nothing (exit 1 if any).")
@click.option("--show-fixes", is_flag=True, help="List the fixes applied and the findings left unfixed.")
@click.option("--statistics", is_flag=True, help="Print the number of findings of each rule instead of the findings.")
@click.option("--stdin-filename", default=None, metavar="PATH",
              help="With the path '-': the source read from stdin is checked as if it were PATH (its kind, settings, "
                   "pairing and rules); --fix prints the fixed source, nothing is written.")
def check(**options) -> None:
    """Lint recipe files, override files and folders ('-': the source on stdin, with --stdin-filename)."""
    results = _run_results(options)
    if results is not None:  # the same command on unchanged input: what it wrote last time
        code = results.replay(lambda err, text: click.echo(text, nl=False, err=err, color=True))
        if code is not None:
            sys.exit(code)
    run = _CheckRun(record=results is not None)
    try:
        _check(run, **options)
    except SystemExit as done:
        if (results is not None and run.output is not None and run.report is not None
                and done.code in (EXIT_CLEAN, EXIT_FINDINGS)):
            from mblint.run_results import run_inputs

            extra = [options["baseline"], options["config_file"]]
            inputs = run_inputs(run.engine, run.report, list(options["paths"]) or ["."], [f for f in extra if f])
            results.store(done.code, run.output, inputs)
        raise


def _run_results(options: dict):
    """The run-level result of this command (mblint.run_results), or None for a run with side
    effects or input that is not a file, or a command not given through ``main``."""
    args = click.get_current_context().meta.get(ARGS)
    if (args is None or options["no_cache"] or options["fix"] or options["diff"] or options["write_baseline"]
            or options["recipe"] or options["output_sarif"] or options["output_json"] or options["output_files"]
            or "-" in options["paths"] or options["stdin_filename"]):
        return None
    from mblint.run_results import RunResults

    try:
        return RunResults.after_served(args, options["cache_dir"])
    except (OSError, ValueError):  # no working folder
        return None


class _CheckRun:
    """A check run: what it writes (through ``echo``, kept in ``output`` when ``record`` as
    [err, text written]), its engine and its report."""

    def __init__(self, record: bool) -> None:
        self.output: list | None = [] if record else None
        self.engine = None
        self.report = None

    def echo(self, message: str = "", err: bool = False, nl: bool = True, color: bool | None = None) -> None:
        text = message + "\n" if nl else message
        if self.output is not None and (color is True or "\x1b" not in text):
            self.output.append([err, text])  # what click.echo writes: it strips nothing else
        elif self.output is not None:  # click may strip these escape codes: not recorded
            self.output = None
        click.echo(text, nl=False, err=err, color=color)


def _check(run: _CheckRun, paths, select, extend_select, ignore, output_format, world_size, version, schema_source,
           search_paths, recipe, dotlist, fail_on, exit_zero, no_cache, cache_dir, jobs, output_sarif, output_json,
           output_files, baseline, write_baseline, config_file, isolated, force_exclude, fix, unsafe_fixes, diff,
           show_fixes, statistics, stdin_filename) -> None:
    echo = run.echo
    from mblint.baseline import BaselineError, apply_baseline, write_baseline as write_baseline_file
    from mblint.engine import CheckOptions, Engine
    from mblint.findings import Severity
    from mblint.settings import SettingsError, SettingsResolver

    outputs = _outputs(output_sarif, output_json, output_files)
    _check_dotlist(dotlist)
    stdin = None
    if paths == ("-",) or (not paths and stdin_filename):
        stdin = _stdin_source(stdin_filename)
        paths, no_cache, jobs = (stdin_filename,), True, 1  # the text is not the file: no cache, no workers
    if output_format is None:
        output_format = "github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text"
    resolver = SettingsResolver(Path(config_file) if config_file else None, isolated=isolated)
    options = CheckOptions(
        select=_split(select), ignore=_split(ignore), extend_select=_split(extend_select),
        world_size=world_size, version=version, search_paths=tuple(Path(p) for p in search_paths),
        recipe=recipe, dotlist=tuple(dotlist), use_cache=not no_cache, jobs=jobs,
        cache_dir=Path(os.path.realpath(cache_dir)) if cache_dir else None,
        settings=resolver, force_exclude=force_exclude, schema_source=schema_source,
    )
    try:
        engine = run.engine = Engine(options)
        if recipe and not paths:  # lint that recipe, with the --set overrides
            paths = (_recipe_file(engine, recipe),)
            options.recipe_function = recipe.rsplit("::", 1)[1]
        if fix or diff:
            from dataclasses import replace

            from mblint.fix import fix_command

            # The fix loop re-lints edited text held in memory: no cache, no worker processes.
            options = replace(options, use_cache=False, jobs=1)
            report, changed, write_errors = fix_command(lambda: Engine(options), list(paths) or ["."],
                                                        unsafe=unsafe_fixes, diff=diff, show_fixes=show_fixes,
                                                        echo=_echo_fix_output, stdin=stdin)
            for error in write_errors:
                echo(_printable(f"mblint: error: {error}"), err=True)
            if diff:
                sys.exit(EXIT_ERROR if write_errors else (EXIT_FINDINGS if changed else EXIT_CLEAN))
            if write_errors:
                sys.exit(EXIT_ERROR)
        else:
            report = engine.check_paths(list(paths) or ["."])
        report.unsafe_fixes = unsafe_fixes  # the footer counts unsafe fixes as fixable then
        root = engine.display_root
        if write_baseline:
            count = write_baseline_file(Path(write_baseline), report.findings, root)
            echo(f"mblint: wrote {count} finding{'s' if count != 1 else ''} to {write_baseline}", err=True)
            sys.exit(EXIT_ERROR if report.errors else EXIT_CLEAN)
        if baseline:
            report.findings, report.baselined, report.stale_baseline = apply_baseline(
                Path(baseline), report.findings, root, report.checked)
        # fail-on is per finding: the setting in force for the finding's file, unless given here
        fail_levels = [Severity.parse(fail_on or engine.settings_for_display(f.location.path).fail_on or "warning")
                       for f in report.findings]
    except (SettingsError, BaselineError, click.UsageError) as error:
        echo(_printable(f"mblint: error: {getattr(error, 'message', error)}"), err=True)
        sys.exit(EXIT_ERROR)
    run.report = report
    if statistics:
        _emit_statistics(report, output_format, echo)
    else:  # with --fix on stdin, stdout holds the fixed source and the findings go to stderr (as in ruff)
        _emit(report, output_format, echo, err=stdin is not None and fix)
    for fmt, target in outputs:
        try:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            Path(target).write_text(_render(report, fmt), encoding="utf-8")
        except OSError as error:
            echo(f"mblint: error: cannot write {target}: {error.strerror}", err=True)
            sys.exit(EXIT_ERROR)
    from mblint.report import printable

    for entry in report.stale_baseline:
        echo(printable(f"mblint: note: stale baseline entry (fixed? shrink the baseline): {entry}"), err=True)
    for note in report.notes:
        echo(f"mblint: note: {printable(note)}", err=True)
    for error in report.errors:
        echo(f"mblint: error: {printable(str(error))}", err=True)
    if report.errors:
        sys.exit(EXIT_ERROR)
    if not exit_zero and any(f.severity >= level for f, level in zip(report.findings, fail_levels)):
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_CLEAN)


def _recipe_file(engine, recipe: str) -> str:
    """The file of ``--recipe PATH_OR_MODULE::FUNCTION``, when no path is given to lint."""
    if "::" not in recipe:
        raise click.UsageError(f"--recipe {recipe!r}: expected PATH_OR_MODULE::FUNCTION")
    from mblint.readers.overrides import find_recipe

    target = find_recipe(engine, recipe, Path.cwd() / "__init__.py")
    if target is None:
        raise click.UsageError(f"--recipe {recipe!r}: {recipe.rsplit('::', 1)[0]} not found")
    return str(target[0])


def _echo_fix_output(text: str, err: bool = False, **options) -> None:
    """What the fix loop prints: its messages (on stderr) quote findings and file names and are
    neutralised; the diff (on stdout) is the files' own text, for ``patch``, and is not."""
    click.echo(_printable(text) if err else text, err=err, **options)


def _printable(text: str) -> str:
    from mblint.report import printable

    return printable(text)


def _check_dotlist(dotlist: tuple[str, ...]) -> None:
    """A malformed ``--set`` is a usage error (exit 2): no configuration could be resolved."""
    if not dotlist:
        return  # and the override parser (ruamel) stays unimported
    from mblint.overrides import DotlistError, parse_dotlist

    for index, item in enumerate(dotlist, start=1):
        try:
            parse_dotlist(item, None)
        except DotlistError as error:
            click.echo(f"mblint: error: --set #{index} {item!r}: {error}", err=True)
            sys.exit(EXIT_ERROR)


def _outputs(output_sarif, output_json, output_files) -> list[tuple[str, str]]:
    outputs = []
    if output_sarif:
        outputs.append(("sarif", output_sarif))
    if output_json:
        outputs.append(("json", output_json))
    for item in output_files:
        fmt, sep, target = item.partition("=")
        if not sep or fmt not in FORMATS or not target:
            raise click.BadParameter(f"{item!r} is not FORMAT=FILE with FORMAT one of {', '.join(FORMATS)}",
                                     param_hint="--output-file")
        outputs.append((fmt, target))
    return outputs


def _render(report, output_format: str) -> str:
    if output_format == "json":
        from mblint.report.json_format import render
    elif output_format == "sarif":
        from mblint.report.sarif import render
    elif output_format == "github":
        from mblint.report.github import render
    elif output_format == "concise":
        from mblint.report.text import render_concise as render
    else:
        from mblint.report.text import render
    return render(report)


def _stdin_source(stdin_filename: str | None):
    """The source on stdin (at most the size limit of a source file) as the fix loop holds a
    file, standing in for ``stdin_filename`` until the command ends; exit 2 without a name
    or when it is no UTF-8 text within the limit."""
    from mblint.extract.modules import MAX_SOURCE_BYTES
    from mblint.fix.files import overlay, state_from_bytes

    problem = None
    if not stdin_filename:
        problem = "'-' reads the source from stdin: give its path with --stdin-filename PATH"
    else:
        data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
        state = state_from_bytes(Path(os.path.abspath(stdin_filename)), data)  # as the fix loop names files
        if len(data) > MAX_SOURCE_BYTES:
            problem = f"stdin: larger than {MAX_SOURCE_BYTES:,} bytes, not read"
        elif state is None:
            problem = "stdin: not UTF-8 text"
    if problem:
        click.echo(_printable(f"mblint: error: {problem}"), err=True)
        sys.exit(EXIT_ERROR)
    click.get_current_context().with_resource(overlay({state.path: state.text}))
    return state


def _emit(report, output_format: str, echo, err: bool = False) -> None:
    stream = sys.stderr if err else sys.stdout
    colour = output_format in ("text", "full", "concise") and _use_colour(stream, os.environ)
    text = _render(report, output_format)
    if colour:
        from mblint.report.text import colourise

        text = colourise(text)
    echo(text, nl=False, color=colour or None, err=err)


def _use_colour(stream, environ) -> bool:
    """Colour on a terminal, unless NO_COLOR is set to anything (no-color.org); FORCE_COLOR
    set to anything but 0 colours any output."""
    if environ.get("NO_COLOR"):
        return False
    if environ.get("FORCE_COLOR", "0") not in ("", "0"):
        return True
    try:
        return stream.isatty() and environ.get("TERM") != "dumb"
    except (AttributeError, ValueError):
        return False


def _emit_statistics(report, output_format: str, echo) -> None:
    """``--statistics``: findings per rule, most first (as ruff prints them)."""
    from collections import Counter

    counts = Counter((f.rule_id, f.rule_name) for f in report.findings)
    fixable = {f.rule_id for f in report.findings if any(not fix.alternative for fix in f.fixes)}
    rows = sorted(counts.items(), key=lambda item: (-item[1], item[0][0]))
    if output_format == "json":
        echo(json.dumps([{"code": rule, "name": name, "count": count, "fixable": rule in fixable}
                               for (rule, name), count in rows], indent=2))
        return
    width = len(str(rows[0][1])) if rows else 1
    for (rule, name), count in rows:
        echo(f"{count:>{width}}\t{rule}\t{'[*] ' if rule in fixable else '    '}{name}")


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


@main.command()
@click.option("--cache-dir", type=click.Path(file_okay=False), envvar="MBLINT_CACHE_DIR", default=None,
              help="Also remove this cache folder (given to check --cache-dir) [env MBLINT_CACHE_DIR].")
def clean(cache_dir) -> None:
    """Remove the result caches: the one a check run here uses, at the project root, every
    .mblint_cache folder below the current folder, and the --cache-dir folder."""
    from mblint.cache import cache_folders_to_clean, remove_cache_folder

    failed = False
    folders = cache_folders_to_clean(Path.cwd())
    if cache_dir and os.path.lexists(cache_dir):
        folders.append(Path(os.path.abspath(cache_dir)))
    for folder in folders:
        try:
            remove_cache_folder(folder)
        except ValueError:
            click.echo(f"mblint: error: not removed: {folder} holds more than an mblint cache", err=True)
            failed = True
            continue
        except OSError as error:
            click.echo(f"mblint: error: cannot remove {folder}: {error.strerror or error}", err=True)
            failed = True
            continue
        click.echo(f"Removed {folder}")
    sys.exit(EXIT_ERROR if failed else EXIT_CLEAN)


@main.command("settings")
@click.argument("path", type=click.Path(exists=True))
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None)
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
def show_settings(path, config_file, output_format) -> None:
    """Print the settings in force for PATH (the nearest mblint.toml or pyproject.toml)."""
    from mblint.settings import SettingsError, SettingsResolver, render_settings

    try:
        settings = SettingsResolver(Path(config_file) if config_file else None).for_path(Path(path))
    except SettingsError as error:
        click.echo(_printable(f"mblint: error: {error}"), err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        click.echo(json.dumps(settings.to_json(), indent=2))
    else:
        click.echo(render_settings(settings, path), nl=False)


@main.command()
@click.argument("target")
@click.option("--override-file", "override_files", multiple=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--set", "dotlist", multiple=True, help="A key=value override applied after override files.")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
@click.option("--megatron-bridge-version", "version", default=None)
@click.option("--search-path", "search_paths", multiple=True, type=click.Path(file_okay=False))
@click.option("--all", "show_all", is_flag=True, help="Also list fields left at their defaults.")
def show(target, override_files, dotlist, output_format, version, search_paths, show_all) -> None:
    """Print the effective configuration of PATH::FUNCTION."""
    from mblint.api import resolve_recipe
    from mblint.extract.modules import SourceError
    from mblint.overrides import DotlistError
    from mblint.report import printable

    launch_target = re.fullmatch(r"(.+):(\d+)", target) if "::" not in target else None
    if launch_target is not None and Path(launch_target.group(1)).is_file():
        _show_launch(Path(launch_target.group(1)), int(launch_target.group(2)), search_paths, version, output_format,
                     show_all)
        return
    if "::" not in target:
        raise click.UsageError("TARGET must be PATH::FUNCTION, or LAUNCH_SCRIPT:LINE")
    path, function = target.rsplit("::", 1)
    if not Path(path).is_file():
        raise click.UsageError(f"{path}: no such file")
    from mblint.settings import SettingsError, SettingsResolver

    try:
        settings = SettingsResolver().for_path(Path(path))  # as check reads them for this file
        search_paths = (*search_paths, *settings.resolved_search_paths())
        cfg = resolve_recipe(path, function, search_paths=search_paths, version=version or settings.version,
                             override_files=override_files, dotlist=dotlist)
    except SettingsError as error:
        click.echo(f"mblint: error: {error}", err=True)
        sys.exit(EXIT_ERROR)
    except (SourceError, LookupError, DotlistError) as error:
        location = f"{error.path}:{error.line}:{error.column}: " if isinstance(error, SourceError) else ""
        click.echo(printable(f"mblint: error: {location}{getattr(error, 'message', error)}"), err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        click.echo(json.dumps(cfg.to_json(), indent=2))
        return
    click.echo(printable(f"# {cfg.recipe.label} (Megatron-Bridge {cfg.schema_version})"))
    _echo_fields(cfg, show_all)


def _show_launch(path: Path, line: int, search_paths, version, output_format, show_all) -> None:
    """The configuration the launch line at ``line`` produces (recipe, override files, command
    line, what the runner does itself) and the world size it fixes."""
    from mblint.engine import CheckOptions, Engine
    from mblint.paths import confinement_for
    from mblint.readers.launch import launch_configuration
    from mblint.report import printable
    from mblint.settings import SettingsResolver

    options = CheckOptions(search_paths=tuple(Path(p) for p in search_paths), version=version,
                           settings=SettingsResolver())  # as check reads them for this file
    engine = Engine(options)
    engine.confinement.roots = confinement_for([str(path)], options.search_paths).roots
    launch, cfg = launch_configuration(engine, path, line)
    settings = engine.file_settings
    for problem in sorted(settings.errors) + [message for _, message in sorted(settings.confinement_errors)]:
        click.echo(printable(f"mblint: error: {problem}"), err=True)
    if settings.errors:
        sys.exit(EXIT_ERROR)
    if launch is None:
        click.echo(printable(f"mblint: error: {path}:{line}: {cfg}"), err=True)
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        document = cfg.to_json()
        document["world_size"] = launch.world_size
        click.echo(json.dumps(document, indent=2))
        return
    world = f"world size {launch.world_size} ({launch.world_text})" if launch.world_size else "world size unknown"
    click.echo(printable(f"# {path}:{launch.command.span.line}: {cfg.recipe.label} "
                         f"(Megatron-Bridge {cfg.schema_version}), {world}"))
    _echo_fields(cfg, show_all)


def _echo_fields(cfg, show_all: bool) -> None:
    """``mblint show``'s lines: each field (set ones only, unless ``show_all``) with its value
    and where it was set last; values and paths come from linted files, so made printable."""
    from mblint.report import printable

    for path_name, resolved in sorted(cfg.fields.items()):
        last = resolved.last_origin
        if not show_all and (last is None or last.kind == "default"):
            continue
        value = "<unknown>" if not resolved.known else repr(resolved.value)
        where = f"  # {last.path}:{last.line}" if last is not None else ""
        click.echo(printable(f"{path_name} = {value}{where}"))


@main.command()
@click.option("--select", multiple=True, help="Rule ids, prefixes or names to enable (comma-separated or repeated).")
@click.option("--extend-select", multiple=True, help="Rules to enable on top of the selection.")
@click.option("--ignore", multiple=True, help="Rule ids, prefixes or names to disable.")
@click.option("--world-size", type=click.IntRange(min=1), default=None, help="GPUs the job runs on.")
@click.option("--megatron-bridge-version", "version", default=None,
              help="Megatron-Bridge version the files are for [setting megatron-bridge-version].")
@click.option("--schema-source", type=click.Choice(["auto", "bundled"]), default="auto",
              help="As for check.")
@click.option("--search-path", "search_paths", multiple=True, type=click.Path(file_okay=False), help="Extra import root.")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None,
              help="Use this settings file (mblint.toml or pyproject.toml) for every file.")
@click.option("--isolated", is_flag=True, help="Ignore settings files.")
@click.option("--debounce", type=click.FloatRange(min=0, max=10), default=0.25, show_default=True,
              help="Seconds after the last edit before an unsaved document is checked.")
def server(select, extend_select, ignore, world_size, version, schema_source, search_paths, config_file, isolated,
           debounce) -> None:
    """Run the language server (LSP over stdio): the findings of `check` as diagnostics, fixes as
    code actions, and the value of a field in each job on hover (docs/editor.md)."""
    from mblint.engine import CheckOptions, Engine
    from mblint.server import serve
    from mblint.settings import SettingsResolver

    config = Path(config_file).resolve() if config_file else None
    roots = tuple(Path(os.path.abspath(p)) for p in search_paths)  # before the server enters the workspace folder

    def make_engine() -> Engine:
        """An engine as `mblint check -` makes one: no cache, no worker processes; the settings
        read afresh for each check (an edit to mblint.toml takes effect while the server runs)."""
        return Engine(CheckOptions(
            select=_split(select), ignore=_split(ignore), extend_select=_split(extend_select), world_size=world_size,
            version=version, search_paths=roots, schema_source=schema_source, use_cache=False, jobs=1,
            settings=SettingsResolver(config, isolated=isolated)))

    serve(make_engine, debounce)


@main.command("rules")
@click.option("--format", "output_format", type=click.Choice(["text", "json"]), default="text")
def list_rules(output_format) -> None:
    """List the available rules."""
    from mblint.plugins import load_plugins

    loaded = load_plugins()
    rules = sorted(loaded.rules, key=lambda r: r.id)
    if output_format == "json":
        click.echo(json.dumps([{"id": r.id, "name": r.name, "severity": r.severity.label,
                                "other_severities": [s.label for s in r.other_severities], "summary": r.summary,
                                "versions": list(r.versions), "requires": list(r.requires), "fixable": r.fixable}
                               for r in rules], indent=2))
    else:
        for rule in rules:
            click.echo(f"{rule.id:7} {rule.name:45} {rule.severity_label():13} {rule.summary}")
    for error in loaded.errors:
        click.echo(f"mblint: error: {error}", err=True)
    if loaded.errors:
        sys.exit(EXIT_ERROR)


@main.command("rule")
@click.argument("rule_id")
def show_rule(rule_id) -> None:
    """Print one rule's documentation."""
    from mblint.plugins import load_plugins

    for rule in load_plugins().rules:
        if rule.id == rule_id.upper() or rule.name == rule_id:
            click.echo(f"# {rule.id} {rule.name}\n\nSeverity: {rule.severity_label()}. {rule.summary}\n")
            click.echo(rule.doc.strip())
            return
    click.echo(f"mblint: error: no rule {rule_id!r} (see `mblint rules`)", err=True)
    sys.exit(EXIT_ERROR)


def run() -> None:
    """The ``mblint`` command as a process (mblint.console.run, when no run-level result answers it).

    A lint run builds millions of small objects; freeing them one by one as the interpreter
    shuts down costs up to a sixth of a run. So, as mypy does, the process ends with
    ``os._exit`` once its output is flushed. The ``SystemExit`` caught here keeps the command's
    frame, and with it everything the run built, alive until then. In-process callers (tests,
    ``CliRunner``) call ``main`` and keep the ordinary exit.

    The cyclic garbage collector is paused for the run: it allocates millions of small acyclic
    objects that reference counting frees, and the collector's rescans of them cost about a
    third of the run time. It stays paused until ``os._exit`` (turned back on, its first
    collection would walk everything the run allocated: 9 % of a cold run's CPU), and is
    restored only if ``main`` fails with an unexpected error."""
    from mblint.console import flush_and_exit

    was_enabled = gc.isenabled()
    gc.disable()
    try:
        try:
            main()
        except SystemExit as done:
            code = done.code
        else:  # pragma: no cover - click's standalone mode always ends in SystemExit
            code = 0
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
            code = 1
        flush_and_exit(code or 0)
    finally:  # reached only when main() raised something other than SystemExit
        if was_enabled:
            gc.enable()




if __name__ == "__main__":
    run()
