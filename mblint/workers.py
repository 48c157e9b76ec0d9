"""Work spread over a ``concurrent.futures`` process pool forked from this process, which has
already loaded what every unit needs (the workers inherit it instead of loading it again).

With N jobs the pool has N - 1 workers and this process is the N-th. All take the units in list
order (the biggest first, so the work left at the end is small and all finish together): each
worker has one unit waiting besides the one it is on, and this process takes the next unit
between its look-ups of their answers; its own answers need no transfer. A unit whose worker
failed or died is computed here.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

from mblint.findings import decode, encode
from mblint.results import FileError, FileResult

if TYPE_CHECKING:
    from concurrent.futures import Future

_work: Callable[[Any], Any] | None = None
_units: list = []


def can_fork() -> bool:
    import multiprocessing  # with the pool below, imported only by a run that forks

    return "fork" in multiprocessing.get_all_start_methods()


def run_units(work: Callable[[Any], Any], units: list, jobs: int,
              local_work: Callable[[Any], Any] | None = None) -> Iterator[tuple[int, Any]]:
    """(index, answer) for every unit, once each, in list order: ``jobs - 1`` forked workers
    answer ``work(unit)``; this process answers ``local_work(unit)`` (default ``work``) for the
    units it takes and for those a worker could not answer."""
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    local_work = local_work or work
    pool = ProcessPoolExecutor(jobs - 1, multiprocessing.get_context("fork"),
                               initializer=_adopt, initargs=(work, units))
    sent: dict[Future, int] = {}
    following = 0  # the index of the next unit nobody has taken
    finished = False
    try:
        while following < len(units) or sent:
            while following < len(units) and len(sent) < 2 * (jobs - 1):  # one waiting per worker
                try:
                    sent[pool.submit(_answer, following)] = following
                except BrokenProcessPool:  # a worker died: this process does the rest
                    break
                following += 1
            if following < len(units):
                following += 1
                yield following - 1, local_work(units[following - 1])
                ready = [future for future in sent if future.done()]
            else:
                ready = wait(sent, return_when=FIRST_COMPLETED).done
            for future in ready:
                index = sent.pop(future)
                yield index, _answer_of(future, lambda: local_work(units[index]))
        finished = True
    finally:
        pool.shutdown(wait=finished, cancel_futures=not finished)


def _answer_of(future: Future, compute_here: Callable[[], Any]) -> Any:
    try:
        return future.result()
    except Exception:  # noqa: BLE001 - the worker failed or died (BrokenProcessPool): redo it here
        return compute_here()


def _adopt(work: Callable[[Any], Any], units: list) -> None:
    """In each worker, at its start: the work and the units, inherited through the fork, so that
    only unit indices and answers are pickled."""
    global _work, _units
    _work, _units = work, units


def _answer(index: int) -> Any:
    return _work(_units[index])


# ----- files shared among the workers of a run ------------------------------------------------

# Source bytes that keep a worker busy long enough to pay for starting it and sending its
# answers back (about 30 ms of work; a fork and the transfer cost about 10-15 ms).
BYTES_PER_WORKER = 100_000


def default_jobs(sizes: dict[Path, int]) -> int:
    """One worker per ``BYTES_PER_WORKER`` of source to check (``sizes``: bytes per file);
    never more than the cores."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if cores <= 1 or len(sizes) <= 1:
        return 1
    return min(cores, max(1, sum(sizes.values()) // BYTES_PER_WORKER))


def check_files(engine: Any, paths: list[Path], known_sizes: dict[Path, int]):
    """(path, FileResult, dependencies) for each of ``paths``, checked by ``engine``, in
    worker processes when there is enough work to pay for them (``known_sizes``: bytes per
    file, as discovery found them)."""
    options = engine.options
    sizes = ({path: known_sizes[path] if path in known_sizes else file_size(path) for path in paths}
             if options.jobs != 1 else {})
    jobs = options.jobs if options.jobs is not None else default_jobs(sizes)
    units = work_groups(paths, jobs, sizes) if jobs > 1 else []
    if len(units) <= 1:
        for path in paths:
            yield (path, *engine.check_file_guarded(path))
        return
    yield from check_in_workers(engine, paths, units, min(jobs, len(units)))


def prepare_resolver(engine: Any, paths: list[Path]) -> None:
    """Before the workers are forked: import the resolver and load the schema that the
    first recipe file reads under its settings, which every worker would otherwise do
    again for itself (each file's check applies its own settings again)."""
    first = next((path for path in paths if path.suffix == ".py"), None)
    if first is not None:
        try:
            engine.enter_file(first)
            engine.project.interpreter_for(first)
        except Exception:  # noqa: BLE001 - the file's own check reports what is wrong
            pass


def check_in_workers(engine: Any, paths: list[Path], groups: list[list[Path]], jobs: int):
    import pickle

    if not can_fork():
        for path in paths:
            yield (path, *engine.check_file_guarded(path))
        return

    def check_unit(unit: list[str]) -> bytes:
        return dumps_for_transfer([(raw, *engine.check_file_guarded(Path(raw))) for raw in unit])

    def check_unit_here(unit: list[str]) -> list[tuple[str, FileResult, set[Path]]]:
        return [(raw, *engine.check_file_guarded(Path(raw))) for raw in unit]

    units = [[str(p) for p in group] for group in groups]
    prepare_resolver(engine, paths)
    results = {}
    for _, answers in run_units(check_unit, units, jobs, check_unit_here):
        if isinstance(answers, bytes):  # from a worker
            answers = pickle.loads(answers)
        for raw, result, deps in answers:
            results[raw] = (result, deps)
    for path in paths:  # in the given order, as a single process would report them
        yield (path, *results[str(path)])


def _file_result_reduced(result: FileResult) -> tuple:
    return _file_result, ([encode(finding) for finding in result.findings], result.errors, result.notes,
                          result.recipes, result.resolved, result.directive_free, result.not_analysed, result.schemas,
                          result.unchecked)


def _file_result(findings: list, *rest: Any) -> FileResult:
    """A file result sent by a worker, its findings in the encoding the cache has too."""
    return FileResult([decode(parts) for parts in findings], *rest)


def _file_error_reduced(error: FileError) -> tuple:
    return FileError, (error.path, error.message, error.line, error.column)


_TRANSFER_TABLE: dict | None = None


def dumps_for_transfer(value: Any) -> bytes:
    """``value`` (file results, the findings in them) pickled for another process of the same
    run: a result as the tuple of its values, its findings encoded (``mblint.findings.encode``)."""
    import copyreg
    import io
    import pickle

    global _TRANSFER_TABLE
    if _TRANSFER_TABLE is None:
        _TRANSFER_TABLE = {**copyreg.dispatch_table, FileResult: _file_result_reduced, FileError: _file_error_reduced}
    buffer = io.BytesIO()
    pickler = pickle.Pickler(buffer, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = _TRANSFER_TABLE
    pickler.dump(value)
    return buffer.getvalue()


def work_groups(paths: list[Path], jobs: int, sizes: dict[Path, int]) -> list[list[Path]]:
    """Work units for the workers. Files are grouped by model family (``_family_groups``), whose
    recipes read the same modules: one worker then parses and interprets those once; a group
    much bigger than an even share is cut in contiguous pieces. Biggest first, by bytes, so
    that the work left at the end is small and both workers finish together."""
    share = max(1, sum(sizes.values()) // max(1, jobs * 4))
    units = []
    for group in _family_groups(paths):
        weight = sum(sizes[p] for p in group)
        pieces = max(1, min(len(group), round(weight / share))) if weight > 2 * share else 1
        step = -(-len(group) // pieces)
        units.extend(group[i:i + step] for i in range(0, len(group), step))
    return sorted(units, key=lambda unit: -sum(sizes[p] for p in unit))


def _family_groups(paths: list[Path]) -> list[list[Path]]:
    """Files grouped by the name of their folder one level below the top folders under the
    folder common to all of them: ``recipes/llama/...`` and ``perf_recipes/llama/...`` are one
    family (performance recipes call the family's base recipes). A file less deep is grouped
    by its top folder."""
    cwd = os.getcwd()
    absolute = {path: os.path.normpath(os.path.join(cwd, path)) for path in paths}
    try:
        common = os.path.commonpath(list(absolute.values()))
    except ValueError:  # different drives
        common = ""
    groups: dict[tuple, list[Path]] = {}
    for path in sorted(paths, key=str):
        parts = _below(absolute[path], common).split(os.sep) if common else [absolute[path]]
        groups.setdefault((parts[1],) if len(parts) > 2 else tuple(parts[:len(parts) - 1]), []).append(path)
    return list(groups.values())


def _below(path: str, folder: str) -> str:
    """``path`` relative to ``folder``, a folder that holds it (both absolute, normalised)."""
    if path == folder:
        return "."
    return path[len(folder.rstrip(os.sep)) + 1:]


def file_size(path: Path) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0

