"""The ``mblint`` command as a process (the console script, ``python -m mblint``). A check
whose run-level result is current is answered from it before click or the engine is imported
(mblint.run_results.served); any other command goes to mblint.cli."""

import os
import sys


def run() -> None:
    from mblint.run_results import served

    code = served(sys.argv[1:])
    if code is not None:
        flush_and_exit(code)
    from mblint.cli import run as command

    command()


def flush_and_exit(code: int) -> None:
    """End the process once its output is flushed, without freeing what it built (mblint.cli.run)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be written anyway
            pass
    os._exit(code)
