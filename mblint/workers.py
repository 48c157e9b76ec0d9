"""Work spread over a ``concurrent.futures`` process pool forked from this process, which has
already loaded what every unit needs (the workers inherit it instead of loading it again).

With N jobs the pool has N - 1 workers and this process is the N-th. All take the units in list
order (the biggest first, so the work left at the end is small and all finish together): each
worker has one unit waiting besides the one it is on, and this process takes the next unit
between its look-ups of their answers; its own answers need no transfer. A unit whose worker
failed or died is computed here.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable, Iterator

_work: Callable[[Any], Any] | None = None
_units: list = []


def can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def run_units(work: Callable[[Any], Any], units: list, jobs: int,
              local_work: Callable[[Any], Any] | None = None) -> Iterator[tuple[int, Any]]:
    """(index, answer) for every unit, once each, in list order: ``jobs - 1`` forked workers
    answer ``work(unit)``; this process answers ``local_work(unit)`` (default ``work``) for the
    units it takes and for those a worker could not answer."""
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
