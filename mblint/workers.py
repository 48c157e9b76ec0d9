"""Work spread over forked worker processes, with nothing but ``os`` pipes and ``pickle``.

``concurrent.futures`` with its queues, feeder threads and the ``multiprocessing`` package
cost a cold run about 20 ms of start-up before the first file is checked, on the critical path.
Here every unit index is written to one task pipe before the workers are forked; each worker
reads 4-byte indices from it (a pipe read of 4 bytes from a buffer holding whole records never
splits one) until the pipe is empty, and writes length-prefixed pickled answers to its own
answer pipe. This process takes units from the same pipe as one of the workers: with N jobs,
N - 1 processes are forked, and its own answers are neither pickled nor decoded (a run spends
about 40 ms of CPU on moving findings between processes). Between its units it reads the answers
that have arrived. A unit whose answer never arrived (its worker died) is computed here.
"""

from __future__ import annotations

import os
import pickle
import select
from typing import Any, Callable, Iterator

try:
    import fcntl
except ImportError:  # pragma: no cover - not on Windows, which has no fork either
    fcntl = None

RECORD = 4  # bytes per unit index in the task pipe
LENGTH = 8  # bytes of the length prefix of an answer
# The task pipe is filled before any worker reads it: the units must fit in the smallest pipe
# buffer of the systems with fork (4 KB); callers merge units beyond that.
MAX_UNITS = 4096 // RECORD
PIPE_BYTES = 1 << 20  # Linux lets any process widen a pipe to /proc/sys/fs/pipe-max-size (1 MB)


def can_fork() -> bool:
    return hasattr(os, "fork")


def run_units(work: Callable[[Any], Any], units: list, jobs: int,
              local_work: Callable[[Any], Any] | None = None) -> Iterator[tuple[int, Any]]:
    """(index, answer) for every unit, in the order answers arrive. ``jobs - 1`` forked workers
    answer ``work(unit)``; this process takes units from the same queue and answers
    ``local_work(unit)`` (default ``work``): its answers need no transfer."""
    if len(units) > MAX_UNITS:
        raise ValueError(f"at most {MAX_UNITS} units")
    local_work = local_work or work
    tasks_read, tasks_write = os.pipe()
    os.write(tasks_write, b"".join(index.to_bytes(RECORD, "little") for index in range(len(units))))
    workers: dict[int, int] = {}  # answer pipe -> pid
    done: set[int] = set()
    finished = False
    try:
        for _ in range(jobs - 1):
            answers_read, answers_write = os.pipe()
            _widen(answers_write)
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
        answers = _Answers(workers)
        while True:
            for index, answer in answers.ready():
                done.add(index)
                yield index, answer
            record = os.read(tasks_read, RECORD)
            if len(record) < RECORD:
                break
            index = int.from_bytes(record, "little")
            answer = local_work(units[index])
            done.add(index)
            yield index, answer
        for index, answer in answers.rest():
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
            yield index, local_work(unit)


def _widen(fd: int) -> None:
    """A bigger pipe buffer (Linux), so that a worker rarely waits for this process, busy with
    its own units, to read its answers."""
    setsize = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if setsize is None:
        return
    try:
        fcntl.fcntl(fd, setsize, PIPE_BYTES)
    except OSError:
        pass


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


class _Answers:
    """Length-prefixed pickled answers read from the workers' answer pipes."""

    def __init__(self, workers: dict[int, int]) -> None:
        self.buffers = {fd: bytearray() for fd in workers}

    def ready(self) -> Iterator[tuple[int, Any]]:
        """The answers that have arrived, without waiting."""
        return self._read(timeout=0)

    def rest(self) -> Iterator[tuple[int, Any]]:
        """Every answer still to come, until each worker has closed its pipe."""
        return self._read(timeout=None)

    def _read(self, timeout: float | None) -> Iterator[tuple[int, Any]]:
        buffers = self.buffers
        while buffers:
            readable, _, _ = select.select(list(buffers), [], [], timeout)
            if not readable:
                return
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
                import signal  # only an interrupted run needs it

                os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass
    workers.clear()
