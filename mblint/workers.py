"""Work spread over forked worker processes, with nothing but ``os`` pipes and ``pickle``.

``concurrent.futures`` with its queues, feeder threads and the ``multiprocessing`` package
cost a cold run about 20 ms of start-up before the first file is checked, on the critical path.
Here every unit index is written to one task pipe before the workers are forked; each worker
reads 4-byte indices from it (a pipe read of 4 bytes from a buffer holding whole records never
splits one) until the pipe is empty, and writes length-prefixed pickled answers to its own
answer pipe. A unit whose answer never arrived (its worker died) is computed in this process.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
from typing import Any, Callable, Iterator

RECORD = 4  # bytes per unit index in the task pipe
LENGTH = 8  # bytes of the length prefix of an answer
# The task pipe is filled before any worker reads it: the units must fit in the smallest pipe
# buffer of the systems with fork (4 KB); callers merge units beyond that.
MAX_UNITS = 4096 // RECORD


def can_fork() -> bool:
    return hasattr(os, "fork")


def run_units(work: Callable[[Any], Any], units: list, jobs: int) -> Iterator[tuple[int, Any]]:
    """(index, ``work(units[index])``) for every unit, in the order answers arrive."""
    if len(units) > MAX_UNITS:
        raise ValueError(f"at most {MAX_UNITS} units")
    tasks_read, tasks_write = os.pipe()
    os.write(tasks_write, b"".join(index.to_bytes(RECORD, "little") for index in range(len(units))))
    workers: dict[int, int] = {}  # answer pipe -> pid
    done: set[int] = set()
    finished = False
    try:
        for _ in range(jobs):
            answers_read, answers_write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(answers_read)
                os.close(tasks_write)
                for other in workers:
                    os.close(other)
                _serve(work, units, tasks_read, answers_write)  # never returns
            os.close(answers_write)
            workers[answers_read] = pid
        os.close(tasks_write)
        tasks_write = -1
        for index, answer in _collect(workers):
            done.add(index)
            yield index, answer
        finished = True
    finally:
        for fd in (tasks_read, tasks_write):
            if fd >= 0:
                os.close(fd)
        _stop(workers, kill=not finished)
    for index, unit in enumerate(units):  # what a worker that died left undone
        if index not in done:
            yield index, work(unit)


def _serve(work: Callable[[Any], Any], units: list, tasks: int, answers: int) -> None:
    """A worker's life: take unit indices until none are left, answer each, exit."""
    code = 0
    try:
        while True:
            record = os.read(tasks, RECORD)
            if len(record) < RECORD:
                break
            index = int.from_bytes(record, "little")
            data = pickle.dumps((index, work(units[index])), protocol=pickle.HIGHEST_PROTOCOL)
            _write_all(answers, len(data).to_bytes(LENGTH, "little") + data)
    except BaseException:  # noqa: BLE001 - the parent computes what this worker left undone
        code = 1
    finally:
        os._exit(code)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _collect(workers: dict[int, int]) -> Iterator[tuple[int, Any]]:
    buffers = {fd: bytearray() for fd in workers}
    while buffers:
        readable, _, _ = select.select(list(buffers), [], [])
        for fd in readable:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                del buffers[fd]
                continue
            buffer = buffers[fd]
            buffer += chunk
            while len(buffer) >= LENGTH:
                size = int.from_bytes(buffer[:LENGTH], "little")
                if len(buffer) < LENGTH + size:
                    break
                yield pickle.loads(buffer[LENGTH:LENGTH + size])
                del buffer[:LENGTH + size]


def _stop(workers: dict[int, int], kill: bool) -> None:
    """Close the answer pipes and reap the workers, killed first when the run was interrupted."""
    for fd, pid in workers.items():
        os.close(fd)
        try:
            if kill:
                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass
    workers.clear()
