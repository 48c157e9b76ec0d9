"""Autofixes: rules propose intents, this package turns them into minimal edits and proves them.

Where an edit goes
------------------
A ``set`` (or ``add``) intent edits the place the value took effect: the field's last origin.

* A YAML override key in a linted override file: the scalar after the key is replaced in
  place (``yaml_writer``; the text outside the scalar is byte-identical).
* An assignment (``cfg.a.b = v``, also ``+=`` and one element of a tuple assignment), a
  ``name=value`` keyword of a constructor, or the value of a dict literal entry, *inside the
  recipe function being checked*, in a linted file: only that value expression is replaced
  (``python_writer``, libcst).
* Anything else (a dataclass default, a base builder such as ``_sft_common()`` in an installed
  Megatron-Bridge, a file outside the linted paths, a helper function that other recipes may
  share, a chained assignment): an assignment ``cfg.<field> = <value>`` is added to the recipe
  function, right after the last top-level statement that touches the field's section (or
  replaces a node on its path, reassigns the config variable, or passes it to a call), else
  right after the seed call, with the function's indentation. A recipe that ends with
  ``return helper(...)`` becomes ``cfg = helper(...)``, the assignment, ``return cfg``.
* A value from a command-line ``--set`` override is not fixed (there is no file to edit).

Values set through a module constant or local variable
------------------------------------------------------
For ``cfg.dataset.seq_length = SEQ`` the origin is the assignment, so the fix replaces its
right-hand side (``SEQ``) with the literal value and leaves the constant alone. A module
constant may be shared by other recipes (and a local variable by other fields), so it is never
edited: changing ``SEQ = 4096`` would silently change every recipe that reads it. The
same holds for a shared helper: an origin outside the recipe function is never edited, an
assignment is added to the recipe instead.

Rename and remove intents edit the origin in place when it lies in the recipe function or an
override file (a keyword or dict key is renamed only under the same parent). In an override
file, a rename to another section (``train.eval_iters`` -> ``validation.eval_iters``) moves the
one-line entry, comment included, to the end of that section, or to a new top-level section at
the end of the file; it is refused when the target is already set there or the old section would
be left empty.

Proving a fix
-------------
All intents of a finding form one group, applied together or not at all; ``--fix`` applies
groups whose intents are all safe, ``--unsafe-fixes`` all groups. Each round lints the current
texts, plans the groups (edits in place first; groups that must add assignments wait for a
round without in-place edits, so a fix in a recipe that others call is seen by them before
they get an assignment of their own), applies them in memory, checks that every edited file
parses, and re-lints with the edited texts standing in for the files. A group whose file does
not parse, whose finding is still there afterwards, or whose result has a finding the texts did
not have before (or a more severe one: a fix must not trade one problem for another) is dropped
and reported with the reason. Rounds repeat
to a fixed point, at most ``MAX_ROUNDS``. Files are written only at the end, only when their
bytes change, atomically, keeping their mode, and never over a file that changed on disk
since it was read.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

from mblint.fix.files import ChangedOnDisk, FileState, NotRewritten, overlay, read_state, write_atomic
from mblint.fix.plan import FixGroup, Planner, Unfixable, finding_key
from mblint.fix.python_writer import ParsedFiles, PyEditError
from mblint.fix.yaml_writer import YamlEditError, apply_yaml_edits

MAX_ROUNDS = 5
UNSAFE_REASON = "unsafe fix: use --unsafe-fixes"


@dataclass(frozen=True)
class FixRecord:
    rule_id: str
    recipe: str
    path: str
    line: int
    description: str
    safe: bool
    reason: str = ""

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        text = f"{where}: {self.rule_id} {self.description}"
        return text + (f" ({self.reason})" if self.reason else "")


@dataclass
class FixRun:
    report: object  # the engine Report of the final texts
    applied: list[FixRecord] = field(default_factory=list)
    dropped: list[FixRecord] = field(default_factory=list)
    unfixable: list[FixRecord] = field(default_factory=list)
    states: dict[Path, FileState] = field(default_factory=dict)
    texts: dict[Path, str] = field(default_factory=dict)
    rounds: int = 0
    fixed_findings: int = 0  # the findings whose fix groups were applied, one per (finding, recipe)
    finding_files: list = field(default_factory=list)  # the display paths each fixed finding edits

    @property
    def changed(self) -> dict[Path, str]:
        return {path: text for path, text in self.texts.items()
                if self.states[path].encode(text) != self.states[path].data}

    def diff(self, display: Callable[[Path], str] = str) -> str:
        chunks = []
        for path, text in sorted(self.changed.items()):
            name = display(path)
            before = self.states[path].text.splitlines(keepends=True)
            after = text.splitlines(keepends=True)
            chunks.extend(unified_diff(before, after, f"a/{name}", f"b/{name}"))
        return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                       for line in chunks)

    def write(self, allows=None) -> tuple[list[Path], list[str]]:
        """``allows``: which link targets may be written through (the project's confinement)."""
        written, errors = [], []
        for path, text in sorted(self.changed.items()):
            try:
                if write_atomic(self.states[path], text, allows):
                    written.append(path)
            except (ChangedOnDisk, NotRewritten) as error:
                errors.append(str(error))
            except OSError as error:
                errors.append(f"{path}: cannot write: {error}")
        return written, errors


def unified_diff(before: list[str], after: list[str], old_name: str, new_name: str, context: int = 3):
    """``difflib.unified_diff`` without its 'popular line' heuristic, which in files of 200
    lines or more treats frequent lines (``_benchmark_common(cfg)``) as junk and shows
    unchanged lines as removed and added again."""
    groups = list(difflib.SequenceMatcher(None, before, after, autojunk=False).get_grouped_opcodes(context))
    if not groups:
        return
    yield f"--- {old_name}\n"
    yield f"+++ {new_name}\n"
    for group in groups:
        first, last = group[0], group[-1]
        yield f"@@ -{_hunk_range(first[1], last[2])} +{_hunk_range(first[3], last[4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in before[i1:i2])
                continue
            yield from ("-" + line for line in before[i1:i2])
            yield from ("+" + line for line in after[j1:j2])


def _hunk_range(start: int, stop: int) -> str:
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def run_fixes(make_engine: Callable[[], object], paths: list[str], *, unsafe: bool = False,
              max_rounds: int = MAX_ROUNDS, initial: FileState | None = None,
              only: Callable[[object], bool] | None = None) -> FixRun:
    """Fix what can be fixed in ``paths`` in memory; ``FixRun.write()`` then writes it.
    ``initial``: a file's text that stands in for it from the start (the source on stdin);
    ``only``: fix just the findings it accepts (the language server's fix of one diagnostic)."""
    states: dict[Path, FileState] = {initial.path: initial} if initial else {}
    texts: dict[Path, str] = {initial.path: initial.text} if initial else {}
    failed_keys: set[tuple] = set()
    run = FixRun(report=None, states=states, texts=texts)
    parsed = ParsedFiles()
    engine, report, captured = _lint(make_engine, paths, texts)
    fixed_fields: dict[tuple[str, str], tuple] = {}  # (recipe, field) -> (value, the fix that set it)
    for round_number in range(1, max_rounds + 1):
        groups, unfixable = _plan_round(engine, report, captured, texts, unsafe, failed_keys, parsed, fixed_fields,
                                        only)
        run.unfixable = list(dict.fromkeys(unfixable))  # one record per place, whatever the configurations
        if not groups:
            break
        run.rounds = round_number
        active = list(groups)
        while active:
            new_texts, broken = _apply(active, texts, states, parsed)
            for group, reason in broken:
                failed_keys.add(group.key)
                run.dropped.extend(_records(group, reason))
            active = [g for g in active if all(g is not b for b, _ in broken)]
            if broken:
                continue
            engine2, report2, captured2 = _lint(make_engine, paths, new_texts)
            remaining = {finding_key(f, cfg, ov) for f, cfg, ov in captured2.values()}
            stuck = [g for g in active if g.key in remaining]
            if stuck:
                for group in stuck:
                    failed_keys.add(group.key)
                    run.dropped.extend(_records(group, "the finding is still reported after the fix"))
                active = [g for g in active if g not in stuck]
                continue
            worse = _worsening_groups(active, captured, captured2, make_engine, paths, texts, states, parsed)
            if worse:
                for group, new_finding in worse:
                    failed_keys.add(group.key)
                    run.dropped.extend(_records(group, f"it leaves a new finding: {new_finding.rule_id} "
                                                       f"[{new_finding.severity.name.lower()}] {new_finding.message}"))
                # The others may hold only part of their fix (an edit they shared with a dropped
                # group was left to it): plan them again, whole, next round.
                active = []
                continue
            for group in active:
                run.applied.extend(_records(group))
                run.fixed_findings += 1
                run.finding_files.append(frozenset(record.path for record in _records(group)))
                for edit in group.edits:
                    if edit.intent.action in ("set", "add"):
                        fixed_fields[(group.finding.recipe, edit.intent.field)] = (edit.intent.value, _records(group)[0])
            texts.clear()
            texts.update(new_texts)
            engine, report, captured = engine2, report2, captured2
            break
        else:
            continue
    run.report = report
    return run


def _severities(captured: dict) -> dict[tuple, int]:
    """The worst severity of each finding (by ``finding_key``) of a lint."""
    worst: dict[tuple, int] = {}
    for finding, cfg, overrides in captured.values():
        key = finding_key(finding, cfg, overrides)
        worst[key] = max(worst.get(key, -1), int(finding.severity))
    return worst


def _new_findings(before: dict[tuple, int], captured: dict) -> list:
    """The findings of ``captured`` that ``before`` did not have, or had less severe."""
    return [finding for finding, cfg, overrides in captured.values()
            if int(finding.severity) > before.get(finding_key(finding, cfg, overrides), -1)]


def _worsening_groups(active, captured, captured_after, make_engine, paths, texts, states, parsed) -> list:
    """The groups whose fix leaves a finding the texts did not have before (or a worse one),
    each with one such finding. A fix must not trade one problem for another: when the new
    finding comes from the groups together, each is tried alone; if none is at fault alone,
    all are."""
    before = _severities(captured)
    new = _new_findings(before, captured_after)
    if not new:
        return []
    if len(active) == 1:
        return [(active[0], new[0])]
    worse = []
    for group in active:
        alone, broken = _apply([group], texts, states, parsed)
        if broken:
            continue
        _, _, captured_alone = _lint(make_engine, paths, alone)
        found = _new_findings(before, captured_alone)
        if found:
            worse.append((group, found[0]))
    return worse or [(group, new[0]) for group in active]


def _lint(make_engine, paths, texts):
    """Lint with ``texts`` standing in for files; remember each finding's configuration."""
    engine = make_engine()
    # Findings are captured with their configurations in this process, and must reflect the
    # texts in memory: no worker processes, no cached results.
    engine.options = replace(engine.options, use_cache=False, jobs=1)
    captured: dict[int, tuple] = {}
    current = {"overrides": ()}
    check_job = engine.check_job
    run_rules = engine.run_rules

    def check_job_tracked(job, text, report):
        current["overrides"] = tuple(str(o) for o in job.override_files) + tuple(job.overrides)
        try:
            return check_job(job, text, report)
        finally:
            current["overrides"] = ()

    def run_rules_tracked(cfg, text, report, job=None):
        start = len(report.findings)
        world_readers = run_rules(cfg, text, report, job)
        for finding in report.findings[start:]:
            captured[id(finding)] = (finding, cfg, current["overrides"])
        return world_readers

    engine.check_job = check_job_tracked
    engine.run_rules = run_rules_tracked
    with overlay(texts):
        report = engine.check_paths(list(paths))
    # Every finding of every configuration, before the report merges findings that share a
    # location (recipes that get a value from one helper): each recipe needs its own fix.
    return engine, report, captured


def _undoes(finding, fixed_fields: dict) -> str:
    """Why ``finding``'s fix may not be applied: it would set a field that a fix applied
    earlier in this run set to another value (the fixes of different findings touching the
    same field are planned together: the first one stands); "" when it would not."""
    for intent in finding.applicable_fixes:
        earlier = fixed_fields.get((finding.recipe, intent.field))
        if intent.action in ("set", "add") and earlier is not None and earlier[0] != intent.value:
            value, record = earlier
            return (f"it would undo the {record.rule_id} fix that set {intent.field} to {value!r} in this run; "
                    f"choose between them by hand")
    return ""


def _plan_round(engine, report, captured, texts, unsafe, failed_keys, parsed, fixed_fields=None, only=None):
    planner = Planner(engine, texts, parsed)
    groups: list[FixGroup] = []
    unfixable: list[FixRecord] = []
    seen_keys: set[tuple] = set()
    ordered = sorted(captured.values(), key=lambda e: (e[0].sort_key(), e[1].recipe.label, e[2]))
    suppressed = {f.identity() for f in report.findings if getattr(f, "suppressed", False)}
    for finding, cfg, overrides in ordered:
        if not finding.applicable_fixes or getattr(finding, "suppressed", False) or finding.identity() in suppressed:
            continue
        if only is not None and not only(finding):
            continue
        key = finding_key(finding, cfg, overrides)
        if key in failed_keys or key in seen_keys:
            continue
        seen_keys.add(key)
        undoing = _undoes(finding, fixed_fields or {})
        if undoing:
            unfixable.append(FixRecord(finding.rule_id, finding.recipe, finding.location.path, finding.location.line,
                                       "; ".join(i.description or i.action for i in finding.applicable_fixes),
                                       all(i.safe for i in finding.applicable_fixes), undoing))
            continue
        if not unsafe and not all(i.safe for i in finding.applicable_fixes):
            unfixable.append(FixRecord(finding.rule_id, finding.recipe, finding.location.path, finding.location.line,
                                       "; ".join(i.description or i.action for i in finding.applicable_fixes), False,
                                       UNSAFE_REASON))
            continue
        try:
            groups.append(planner.plan(finding, cfg, overrides))
        except Unfixable as error:
            unfixable.append(FixRecord(finding.rule_id, finding.recipe, finding.location.path, finding.location.line,
                                       "; ".join(i.description or i.action for i in finding.applicable_fixes),
                                       all(i.safe for i in finding.applicable_fixes), str(error)))
    if any(g.in_place for g in groups):
        groups = [g for g in groups if g.in_place]
    else:
        # A recipe that calls another recipe being fixed waits: that fix may reach it too.
        fixed = {g.finding.recipe.rsplit("::", 1)[-1] for g in groups}
        waiting = []
        for group in groups:
            path, _, function = group.finding.recipe.rpartition("::")
            if planner.called_names(path, function) & (fixed - {function}):
                waiting.append(group)
        if len(waiting) < len(groups):
            groups = [g for g in groups if all(g is not w for w in waiting)]
    # One edit per place: the first group wins; an identical edit proposed again is redundant.
    chosen: list[FixGroup] = []
    claimed: dict[tuple, tuple] = {}
    for group in groups:
        keys = [(e.conflict_key(), e.payload()) for e in group.edits]
        if any(k in claimed and claimed[k] != p for k, p in keys):
            continue  # conflicts with an earlier group; re-planned next round
        if keys and all(k in claimed for k, _ in keys):
            continue  # the same edits are already chosen
        fresh = [e for e in group.edits if e.conflict_key() not in claimed]
        for k, p in keys:
            claimed[k] = p
        group.edits = fresh
        chosen.append(group)
    return chosen, unfixable


def _apply(groups: list[FixGroup], texts: dict[Path, str], states: dict[Path, FileState], parsed: ParsedFiles):
    """New texts with every group applied, or the groups that broke a file."""
    by_file: dict[Path, list] = {}
    for group in groups:
        for edit in group.edits:
            by_file.setdefault(edit.path, []).append((group, edit))
    new_texts = dict(texts)
    broken: list[tuple[FixGroup, str]] = []
    for path, items in by_file.items():
        if path not in states:
            state = read_state(path)
            if state is None:
                broken.extend((g, f"{path} cannot be read as UTF-8") for g, _ in items)
                continue
            states[path] = state
        original = texts.get(path, states[path].text)
        try:
            new_texts[path] = _edit_text(path, original, [e.edit for _, e in items], parsed)
            continue
        except (PyEditError, YamlEditError) as error:
            first_error = str(error)
        # Find the groups at fault: add them one at a time.
        accepted: list = []
        for group in _unique(g for g, _ in items):
            mine = [e.edit for g, e in items if g is group]
            try:
                _edit_text(path, original, accepted + mine, parsed)
                accepted += mine
            except (PyEditError, YamlEditError) as error:
                broken.append((group, str(error) or first_error))
        if not broken:
            broken.append((items[0][0], first_error))
    return new_texts, broken


def _edit_text(path: Path, text: str, edits: list, parsed: ParsedFiles) -> str:
    from mblint.fix.plan import YAML_SUFFIXES

    if str(path).endswith(YAML_SUFFIXES):
        return apply_yaml_edits(text, edits)
    return parsed.get(path, text).apply(edits)


def _unique(groups) -> list:
    result = []
    for group in groups:
        if all(group is not g for g in result):
            result.append(group)
    return result


def _records(group: FixGroup, reason: str = "") -> list[FixRecord]:
    finding = group.finding
    if not group.edits:
        return [FixRecord(finding.rule_id, finding.recipe, finding.location.path, finding.location.line,
                          "; ".join(i.description or i.action for i in finding.applicable_fixes), group.safe, reason)]
    return [FixRecord(finding.rule_id, finding.recipe, edit.display, edit.line,
                      edit.intent.description or f"{edit.intent.action} {edit.intent.field}", edit.intent.safe, reason)
            for edit in group.edits]


def fix_command(make_engine, paths: list[str], *, unsafe: bool, diff: bool, show_fixes: bool, echo,
                stdin: FileState | None = None) -> tuple:
    """What ``mblint check --fix/--unsafe-fixes/--diff`` does. Returns (report, changed, errors):
    the report of the fixed texts, whether files changed (or would), and write errors.
    ``stdin``: the source read from stdin for ``paths[0]``; --fix prints it fixed instead of
    writing anything."""
    run = run_fixes(make_engine, paths, unsafe=unsafe, initial=stdin)
    display_root = allows = None
    try:
        engine = make_engine()
        display_root, allows = Path(engine.display_root), engine.confinement.allows
    except Exception:  # noqa: BLE001
        pass

    def display(path: Path) -> str:
        if display_root is not None:
            try:
                return str(path.resolve().relative_to(display_root.resolve()))
            except ValueError:
                pass
        return str(path)

    errors: list[str] = []
    changed = bool(run.changed)
    if diff:
        text = run.diff(display)
        if text:
            echo(text, nl=False)
    elif stdin is not None:  # the fixed source, as its file would hold it; nothing is written
        echo(stdin.encode(run.texts.get(stdin.path, stdin.text)).decode("utf-8"), nl=False)
    else:
        written, errors = run.write(allows)
        if errors:  # report only what was written
            _keep_written(run, {display(path) for path in written}, display)
    verb = "Would fix" if diff else "Fixed"
    if show_fixes or diff:
        for record in run.applied:
            echo(f"{verb}: {record}", err=True)
    for record in dict.fromkeys(run.dropped):  # one line per edit, whatever the configurations
        echo(f"mblint: note: fix dropped: {record}", err=True)
    unsafe_left = len({(r.rule_id, r.path, r.line) for r in run.unfixable if r.reason == UNSAFE_REASON})
    more = (f" ({unsafe_left}{' more' if run.applied else ''} finding{'s' if unsafe_left != 1 else ''} with an "
            f"unsafe fix: add --unsafe-fixes)") if unsafe_left else ""
    if run.applied:
        count, edits, files = run.fixed_findings, len(run.applied), len(run.changed)
        echo(f"{verb} {count} finding{'s' if count != 1 else ''} with {edits} edit{'s' if edits != 1 else ''} "
             f"in {files} file{'s' if files != 1 else ''}{more}.", err=True)
    elif diff:
        echo(f"No fixes would be applied{more}.", err=True)
    for record in run.unfixable:
        if show_fixes or "would undo" in record.reason:
            echo(f"Not fixed: {record}", err=True)
    return run.report, changed, errors


def _keep_written(run: FixRun, written: set[str], display) -> None:
    """Leave in ``run`` only the fixes of the files that were written (``written``: their
    display paths as ``display`` gives them); the others go to ``unfixable``."""
    def was_written(path: str) -> bool:
        return display(Path(path)) in written

    kept = [files for files in run.finding_files if all(map(was_written, files))]
    run.fixed_findings, run.finding_files = len(kept), kept
    run.unfixable += [replace(record, reason="its file was not written") for record in run.applied
                      if not was_written(record.path)]
    run.applied = [record for record in run.applied if was_written(record.path)]
    run.texts = {path: text for path, text in run.texts.items() if display(path) in written}
