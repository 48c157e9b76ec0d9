"""The serial start of a cold run alone: runs ``mblint check --no-cache ARGS`` and exits where
the first worker process would be forked (imports, rule loading, discovery, settings and work
grouping done; no file checked). For counting what the start costs with tools that follow one
process, e.g. from a corpus folder:

    valgrind --tool=callgrind python /path/to/benchmarks/prefork.py $(cat FILES)
    strace -f -c python /path/to/benchmarks/prefork.py $(cat FILES)

A run that would not fork (one job, or too little work) checks its files and ends as usual.
"""

import os
import sys

import mblint.workers


def _stop_at_fork(*args, **kwargs):
    os._exit(0)
    yield  # a generator, as run_units is


mblint.workers.run_units = _stop_at_fork
sys.argv = ["mblint", "check", "--no-cache", *sys.argv[1:]]

from mblint.cli import run  # noqa: E402 - after the patch above, as a fork would find it

run()
