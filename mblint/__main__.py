"""``python -m mblint``. Python puts the working folder first on ``sys.path`` for ``-m``, so
a linted tree holding ``click.py`` or ``json.py`` would be imported, and run, by mblint's own
imports: that entry is dropped before anything else is imported. What Python imports before
this file runs (``runpy.py``, an ``mblint/`` folder in the working folder) cannot be guarded
here: the console script ``mblint`` (what pre-commit runs) and ``python -P -m mblint``
(Python 3.11+) never search the working folder. See docs/robustness.md."""

import os
import sys

if not sys.flags.safe_path and sys.path and os.path.abspath(sys.path[0] or os.curdir) == os.getcwd():
    del sys.path[0]

from mblint.console import run  # noqa: E402

run()
