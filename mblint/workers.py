"""Work spread over a ``concurrent.futures`` process pool forked from this process, which has
already loaded what every unit needs (the workers inherit it instead of loading it again).

With N jobs the pool has N - 1 workers and this process is the N-th: the workers are handed
units from the front of the list (the biggest), two at a time each, and this process takes units
from the back between its look-ups of their answers; its own answers need no transfer. A unit
whose worker failed or died is computed here.
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
    """(index, answer) for every unit, once each. ``jobs - 1`` forked workers answer
    ``work(unit)`` for units from the front of the list; this process answers
    ``local_work(unit)`` (default ``work``) for units from the back, and for those a worker could
    not answer."""
    local_work = local_work or work
    pool = ProcessPoolExecutor(jobs - 1, multiprocessing.get_context("fork"),
                               initializer=_adopt, initargs=(work, units))
    sent: dict[Future, int] = {}
    front, back = 0, len(units)
    finished = False
    try:
        while front < back or sent:
            while front < back and len(sent) < 2 * (jobs - 1):  # a unit waiting for each worker
                try:
                    sent[pool.submit(_answer, front)] = front
                except BrokenProcessPool:  # a worker died: this process does the rest
                    break
                front += 1
            if front < back:
                back -= 1
                yield back, local_work(units[back])
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
