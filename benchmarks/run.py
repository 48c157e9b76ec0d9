"""mblint speed benchmark (issue 6).

    pip install -e .[bench]            # ruff and fixit, next to mblint
    python benchmarks/run.py           # full run (Fixit once per corpus, ~1-2 min of Fixit)
    python benchmarks/run.py --quick   # 3 repetitions, no Fixit, synthetic 50 and 500 only

Prepares the corpus (Megatron-Bridge 0.3.1 and 0.6.2 recipes, see prepare_corpus.py) and the
synthetic trees (generate_synthetic.py), then times, in the same run and alternating the tools
every repetition, on the same files:

  ast        python -c "import ast ...; ast.parse every file"   (floor: read+parse, interpreter start)
  ruff       ruff check --isolated --no-cache --select ALL --exit-zero FILES
  fixit      fixit lint FILES                                    (slow: 1 repetition by default)
  cold       mblint check --no-cache FILES
  cold-in-package  the same, run in a folder holding the whole Megatron-Bridge package
             (the recipes' imports then resolve to source files mblint reads; for reference)
  warm       mblint check FILES      (after one warm-up run; nothing changed)
  one-file   mblint check ONE_FILE   (interpreter start included, as pre-commit calls it)
  one-file-nocache  mblint check --no-cache ONE_FILE
  one-file-large(-nocache)  the same on the largest 0.6.2 recipe file (issue 34's pre-commit case)
  one-file-large-edited  mblint check --cache-dir D LARGE_FILE with D's result entries removed first:
             pre-commit after an edit of the file (its entry misses; the plugin catalog is current)
  version    mblint --version

and reports medians (of wall time, and of the CPU time, user + system, of each command with
the processes it waited for), peak memory of mblint (separate, untimed run), the synthetic scaling
table, and the ratios named as targets in issue 6, with the spread of the cold and warm ratios
over the repetitions and the machine's two-core slowdown (a CPU loop alone, then two at once,
each repetition). Results go to benchmarks/results/latest.json.

mblint is treated as a black box: the `mblint` console script next to this interpreter, else on
PATH (override with --mblint "CMD ..."). Exit codes 0 and 1 mean "ran" (1 = findings); anything
else, a timeout or a missing executable is reported as a failure and the other tools carry on.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import os
import platform
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import generate_synthetic  # noqa: E402
import prepare_corpus  # noqa: E402

CORPUS_DIR = prepare_corpus.CORPUS_DIR
RESULTS_DIR = HERE / "results"
MAIN_CORPUS = "mb-0.6.2"  # the current-main-sized tree; targets are judged on it
ONE_FILE_CANDIDATES = [
    "megatron/bridge/perf_recipes/llama/h100/llama3.py",
    "megatron/bridge/recipes/llama/llama3.py",
]
# Issue 34's pre-commit case: the largest recipe file of the 0.6.2 tree.
LARGE_FILE = "megatron/bridge/recipes/qwen/h100/qwen3.py"
OK_CODES = (0, 1)
# The tools run as on a user's machine: Python writes and reuses .pyc files. A
# PYTHONDONTWRITEBYTECODE=1 inherited from the caller's environment (some CI images and
# sandboxes set it) would make every Python tool recompile its modules on every run.
TOOL_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
SYNTHETIC_MEASURES = ("ast", "ast-discard", "ruff", "cold")
# Targets that are a ratio of two measures of one repetition: their per-repetition spread is shown.
PAIRED = {"cold_over_ruff": ("cold", "ruff"), "warm_over_ruff": ("warm", "ruff"),
          "cold_over_ruff_34": ("cold", "ruff"), "warm_over_ruff_34": ("warm", "ruff")}
# Printed beside the targets, not judged: issue 6 names the recipe folders alone as the corpus.
# Each is shown against the threshold of the target named beside it.
REFERENCE = {"cold_in_package_over_ruff": ("cold-in-package", "ruff", "cold_over_ruff"),
             # issue 25: the schema derived from the package (cached) and derived afresh, each
             # against the bundled schema on the same files in the same folder: <= 1.2
             "derived_over_bundled": ("cold-in-package", "cold-in-package-bundled", 1.2),
             "derived_afresh_over_bundled": ("cold-in-package-derive", "cold-in-package-bundled", 1.2)}
# Where cold-in-package-derive keeps the schema it derives (removed before each run).
SCHEMA_SCRATCH = Path(tempfile.gettempdir()) / "mblint-bench-schema"
# Where one-file-large-edited keeps its cache (its result entries removed before each run).
EDITED_SCRATCH = Path(tempfile.gettempdir()) / "mblint-bench-edited"
AST_KEEP_MAX_MODULES = 1000  # the keep-every-tree `ast` floor is skipped on bigger synthetic trees

# Targets from issue 6: (key, description, how to compute, comparison, threshold)
TARGETS = [
    ("cold_over_ruff", "mblint cold / ruff --select ALL", "<=", 4.0),
    ("warm_over_ruff", "mblint warm / ruff --select ALL", "<=", 1.0),
    ("fixit_over_cold", "fixit / mblint cold", ">=", 30.0),
    ("one_file_s", "one-file run, median wall seconds", "<=", 0.3),
    ("one_file_nocache_s", "one-file run --no-cache, median wall seconds", "<=", 0.3),
    ("per_kloc_5000_over_500", "cold s/kloc at 5000 modules / at 500", "<=", 1.3),
    ("peak_rss_mb", "mblint cold peak RSS (MB, whole process tree)", "<", 250.0),
    # issue 34, section 2
    ("cold_over_ruff_34", "issue 34: mblint cold / ruff --select ALL", "<=", 5.0),
    ("warm_over_ruff_34", "issue 34: mblint warm / ruff --select ALL", "<=", 0.5),
    ("one_file_large_s", "issue 34: one-file run on LARGE_FILE, seconds", "<=", 0.15),
    ("one_file_large_nocache_s", "issue 34: the same, --no-cache, seconds", "<=", 0.15),
    ("one_file_large_edited_s", "issue 34: the same after an edit of the file, s", "<=", 0.15),
]


# --------------------------------------------------------------------------- tools

def find_tool(name: str) -> list[str] | None:
    """The console script ``name`` next to this interpreter (same venv), else on PATH."""
    local = Path(sys.executable).parent / name
    if local.is_file() and os.access(local, os.X_OK):
        return [str(local)]
    found = shutil.which(name)
    return [found] if found else None


INSTALL_HINT = "install the benchmark tools with: pip install -e .[bench]  (ruff, fixit)"


@dataclass
class Measure:
    name: str
    cmd_display: str
    times: list[float] = field(default_factory=list)
    cpu_times: list[float] = field(default_factory=list)  # user + sys of the process tree, per time
    returncodes: list[int] = field(default_factory=list)
    status: str = "pending"  # ok | failed | missing | skipped
    error: str = ""

    @property
    def median(self) -> float | None:
        return statistics.median(self.times) if self.times else None

    def to_json(self) -> dict:
        d = asdict(self)
        d["median_s"] = self.median
        d["min_s"] = min(self.times) if self.times else None
        d["cpu_median_s"] = statistics.median(self.cpu_times) if self.cpu_times else None
        return d


def _tail(path: Path, n: int = 1200) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode("utf-8", "replace").strip()


CRASH = -1  # exit code 1 *with a Python traceback*: a crash, not "findings"


def looks_like_crash(stderr_path: Path) -> bool:
    """Python exits with 1 on an uncaught exception, the same code linters use for findings."""
    try:
        return b"Traceback (most recent call last)" in stderr_path.read_bytes()
    except OSError:
        return False


@dataclass
class Run:
    wall: float  # seconds
    returncode: int  # -9: timed out, -127: could not be started, CRASH: a Python traceback
    message: str  # stderr (or stdout) tail on failure
    cpu: float = 0.0  # user + system seconds of the command and every process it waited for


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(cmd: list[str], cwd: Path, timeout: float) -> Run:
    """Run ``cmd`` and time it. Its CPU time is what this process's reaped children used
    meanwhile: the command and the workers or threads it reaped (nothing else runs then)."""
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile(delete=False) as err:
        cpu0 = _children_cpu()
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=TOOL_ENV)
        except OSError as e:
            return Run(0.0, -127, str(e))
        # A blocking wait: Popen.wait(timeout=...) polls with sleeps of up to 50 ms, which
        # rounds every measured time up to the next poll.
        killer = threading.Timer(timeout, p.kill)
        killer.start()
        rc = p.wait()
        dt = time.perf_counter() - t0
        cpu = _children_cpu() - cpu0
        if not killer.is_alive():
            return Run(dt, -9, f"timed out after {timeout:.0f} s", cpu)
        killer.cancel()
        err.flush()
        msg = ""
        crashed = rc == 1 and looks_like_crash(Path(err.name))
        if rc not in OK_CODES or crashed:
            msg = _tail(Path(err.name))
            if not msg:
                out.seek(0)
                msg = out.read()[-1200:].decode("utf-8", "replace").strip()
        os.unlink(err.name)
        if crashed:
            rc = CRASH
        return Run(dt, rc, msg, cpu)


def timed(measure: Measure, cmd: list[str] | None, cwd: Path, timeout: float) -> None:
    """One timed repetition; a failing tool is marked and not run again."""
    if measure.status in ("failed", "missing", "skipped"):
        return
    if cmd is None:
        measure.status = "missing"
        return
    run = run_once(cmd, cwd, timeout)
    rc, msg = run.returncode, run.message
    measure.returncodes.append(rc)
    if rc in OK_CODES:
        measure.times.append(run.wall)
        measure.cpu_times.append(run.cpu)
        measure.status = "ok"
    else:
        measure.status = "failed"
        if rc == -9:
            measure.error = msg
        elif rc == CRASH:
            measure.error = f"crashed (exit code 1 with a traceback): {msg}"
        else:
            measure.error = f"exit code {rc}: {msg}"


# ------------------------------------------------------------------ peak memory

def _children(pid: int) -> list[int]:
    kids: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                kids.extend(int(x) for x in f.read().split())
    except OSError:
        pass
    return kids


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def peak_memory(cmd: list[str], cwd: Path, timeout: float) -> dict:
    """Run ``cmd`` once (untimed). Report the largest single-process max RSS (wait4 rusage,
    exact) and, on Linux, the largest sum of RSS over the process tree sampled every 10 ms
    (catches worker pools, may miss very short peaks)."""
    p = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=TOOL_ENV)
    tree_peak = 0
    done = threading.Event()
    can_sample = Path(f"/proc/{p.pid}/status").exists()

    def sample() -> None:
        nonlocal tree_peak
        while not done.is_set():
            pids, stack = [], [p.pid]
            while stack:
                q = stack.pop()
                pids.append(q)
                stack.extend(_children(q))
            tree_peak = max(tree_peak, sum(_rss_kb(q) for q in pids))
            done.wait(0.01)

    th = threading.Thread(target=sample, daemon=True) if can_sample else None
    if th:
        th.start()
    stderr_chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: stderr_chunks.append(p.stderr.read()), daemon=True)
    reader.start()
    deadline = time.monotonic() + timeout
    status = 0
    ru = None
    while True:
        pid, status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            break
        if time.monotonic() > deadline:
            p.kill()
            _, status, ru = os.wait4(p.pid, 0)
            break
        time.sleep(0.005)
    p.returncode = os.waitstatus_to_exitcode(status)
    done.set()
    if th:
        th.join()
    reader.join(timeout=5)
    rc = p.returncode
    if rc == 1 and b"Traceback (most recent call last)" in b"".join(stderr_chunks):
        rc = CRASH
    # ru_maxrss is in KiB on Linux, bytes on macOS.
    scale = 1 / 1024 if sys.platform != "darwin" else 1 / (1024 * 1024)
    res = {
        "returncode": rc,
        "max_rss_single_process_mb": round(ru.ru_maxrss * scale, 1) if ru else None,
        "peak_rss_tree_sampled_mb": round(tree_peak / 1024, 1) if can_sample else None,
    }
    if rc not in OK_CODES:
        res["error"] = b"".join(stderr_chunks)[-1200:].decode("utf-8", "replace").strip()
    vals = [v for v in (res["max_rss_single_process_mb"], res["peak_rss_tree_sampled_mb"]) if v]
    res["peak_mb"] = max(vals) if vals else None
    return res


# ------------------------------------------------------------------------ corpus

@dataclass
class Corpus:
    name: str
    root: Path
    files: list[str]  # relative to root
    lines: int
    one_file: str | None = None
    large_file: str | None = None  # LARGE_FILE, when the corpus has it
    package_root: Path | None = None  # the same files with the whole package beside them

    @classmethod
    def load(cls, name: str, root: Path) -> "Corpus":
        files = [str(p.relative_to(root)) for p in prepare_corpus.python_files(root)]
        lines = sum(len((root / f).read_bytes().splitlines()) for f in files)
        return cls(name, root, files, lines)

    def pick_one_file(self) -> None:
        self.large_file = LARGE_FILE if LARGE_FILE in self.files else None
        for cand in ONE_FILE_CANDIDATES:
            if cand in self.files:
                self.one_file = cand
                return
        # else: the median-sized non-__init__ file
        sized = sorted((len((self.root / f).read_bytes()), f) for f in self.files
                       if not f.endswith("__init__.py"))
        self.one_file = sized[len(sized) // 2][1] if sized else None


def package_root_for(version: str, corpus: Corpus) -> Path | None:
    """The whole-package folder of ``version``, when it holds every file of ``corpus``."""
    folder = prepare_corpus.package_path(version, corpus.root.parent)
    if not (folder / prepare_corpus.MARKER).exists():
        return None
    return folder if all((folder / f).is_file() for f in corpus.files) else None


def synthetic_corpus(n: int, seed: int = 0) -> Corpus:
    out = CORPUS_DIR / f"synthetic-{n}"
    manifest_path = out / generate_synthetic.MANIFEST
    # Regenerate when the generator's source changes.
    source_stamp = hashlib.sha256(Path(generate_synthetic.__file__).read_bytes()).hexdigest()[:16]
    fresh = False
    if manifest_path.exists():
        m = json.loads(manifest_path.read_text())
        fresh = m.get("n_modules") == n and m.get("seed") == seed and m.get("generator_stamp") == source_stamp
    if not fresh:
        print(f"generating synthetic tree of {n} modules in {out} ...", flush=True)
        m = generate_synthetic.generate(n, out, seed)
        m["generator_stamp"] = source_stamp
        manifest_path.write_text(json.dumps(m, indent=1))
    prepare_corpus.mark_project_root(out)
    return Corpus.load(f"synthetic-{n}", out)


# ------------------------------------------------------------------------- main

# The floor as issue 6 states it (every tree kept alive in a list) ...
AST_SNIPPET = ("import ast, pathlib, sys; "
               "[ast.parse(pathlib.Path(p).read_bytes(), p) for p in sys.argv[1:]]")
# ... and parse-then-discard. Keeping hundreds of thousands of AST nodes alive makes CPython's
# cyclic GC rescan them again and again, which grows faster than linearly with the tree.
AST_DISCARD_SNIPPET = ("import ast, pathlib, sys\n"
                       "for p in sys.argv[1:]: ast.parse(pathlib.Path(p).read_bytes(), p)")


def commands(corpus: Corpus, tools: dict[str, list[str] | None], skip_fixit: bool) -> dict[str, list[str] | None]:
    files = corpus.files
    mb = tools["mblint"]
    cmds: dict[str, list[str] | None] = {
        "ast": [sys.executable, "-c", AST_SNIPPET, *files],
        "ast-discard": [sys.executable, "-c", AST_DISCARD_SNIPPET, *files],
        "ruff": tools["ruff"] and [*tools["ruff"], "check", "--isolated", "--no-cache", "--select", "ALL",
                                   "--exit-zero", "--quiet", *files],
        "cold": mb and [*mb, "check", "--no-cache", *files],
        **({"cold-baseline": [*tools["baseline"], "check", "--no-cache", *files]} if tools.get("baseline") else {}),
        "warm": mb and [*mb, "check", *files],
    }
    if corpus.package_root is not None:
        cmds["cold-in-package"] = cmds["cold"]
        # the same run with the bundled schema instead of the one derived from the package (issue 25)
        cmds["cold-in-package-bundled"] = mb and [*mb, "check", "--no-cache", "--schema-source", "bundled", *files]
        # and with no derived schema cached: derived again from the package in every repetition
        fresh = shlex.quote(str(SCHEMA_SCRATCH))
        cmds["cold-in-package-derive"] = mb and ["sh", "-c", f'rm -rf {fresh} && exec "$@"', "sh", *mb, "check",
                                                  "--no-cache", "--cache-dir", str(SCHEMA_SCRATCH), *files]
    if not skip_fixit:
        cmds["fixit"] = tools["fixit"] and [*tools["fixit"], "lint", *files]
    if corpus.one_file:
        cmds["one-file"] = mb and [*mb, "check", corpus.one_file]
        cmds["one-file-nocache"] = mb and [*mb, "check", "--no-cache", corpus.one_file]
    if corpus.large_file:
        cmds["one-file-large"] = mb and [*mb, "check", corpus.large_file]
        cmds["one-file-large-nocache"] = mb and [*mb, "check", "--no-cache", corpus.large_file]
        # the result entries (two-hex-digit folders of each version folder) and the run-level results
        # (run-*.json) go, the plugin catalog stays
        cmds["one-file-large-edited"] = mb and ["sh", "-c", 'rm -rf "$0"/*/[0-9a-f][0-9a-f] "$0"/*/run-*.json && exec "$@"',
                                                str(EDITED_SCRATCH), *mb, "check", "--cache-dir",
                                                str(EDITED_SCRATCH), corpus.large_file]
    return cmds


def command_cwd(corpus: Corpus, name: str) -> Path:
    """Where a measure runs: the corpus root, but the package folder for ``cold-in-package``."""
    if name.startswith("cold-in-package") and corpus.package_root is not None:
        return corpus.package_root
    return corpus.root


def display(cmd: list[str] | None, corpus: Corpus, name: str) -> str:
    if cmd is None:
        return f"({name}: executable not found)"
    shown = []
    nfiles = 0
    for a in cmd:
        if a in corpus.files and a not in (corpus.one_file, corpus.large_file):
            nfiles += 1
            continue
        shown.append(os.path.basename(a) if a in (sys.executable,) or a.startswith("/") else a)
    if nfiles:
        shown.append(f"<{nfiles} files>")
    where = f"  (in {corpus.package_root.name}/)" if command_cwd(corpus, name) != corpus.root else ""
    return " ".join(shlex.quote(s) if " " in s else s for s in shown) + where


# A fixed CPU-bound loop that times itself (interpreter start excluded).
SPIN = ("import time\nt = time.perf_counter()\nx = 0\nfor i in range(4_000_000):\n    x += i & 7\n"
        "print(time.perf_counter() - t)")


def _spin_times(copies: int) -> list[float]:
    """The loop's own time in each of ``copies`` processes started together."""
    procs: list[subprocess.Popen] = []
    try:
        for _ in range(copies):
            procs.append(subprocess.Popen([sys.executable, "-c", SPIN], stdout=subprocess.PIPE, text=True,
                                          env=TOOL_ENV))
        outputs = [p.communicate(timeout=60)[0] for p in procs]
    finally:
        for p in procs:  # none is left running when one failed to start or hung
            if p.poll() is None:
                p.kill()
                p.wait()
    return [float(out) for out in outputs]


def two_core_slowdown() -> float | None:
    """How much longer two CPU-bound processes take when they run at once than one alone:
    1.0 on two free cores. mblint's cold run works in two processes and ruff's mostly in one,
    so where the second core of a shared machine is busy elsewhere, cold/ruff grows."""
    try:
        alone = _spin_times(1)[0]
        together = max(_spin_times(2))
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return None
    return together / alone if alone > 0 else None


def measure_corpus(corpus: Corpus, tools: dict, reps: int, fixit_reps: int, skip_fixit: bool,
                   timeout: float, fixit_timeout: float) -> tuple[dict[str, Measure], list[float]]:
    cmds = commands(corpus, tools, skip_fixit)
    ms = {k: Measure(k, display(c, corpus, k)) for k, c in cmds.items()}
    # Warm-up: fill mblint's cache (and the OS page cache) once before timing.
    if cmds.get("one-file-large-edited"):
        shutil.rmtree(EDITED_SCRATCH, ignore_errors=True)  # written by this mblint: its plugin catalog
        run_once(cmds["one-file-large-edited"], corpus.root, timeout)
    if cmds.get("warm"):
        rc = run_once(cmds["warm"], corpus.root, timeout).returncode
        if rc not in OK_CODES:
            why = "timeout" if rc == -9 else "crashed" if rc == CRASH else f"exit {rc}"
            print(f"  warm-up of mblint failed ({why}); its measurements will be reported as failed",
                  flush=True)
    order = list(cmds)
    slowdowns: list[float | None] = []  # one per repetition; None when the loop could not be timed
    for rep in range(reps):
        # Rotate the order each repetition so no tool always runs first / right after another.
        k = rep % len(order)
        before = {n: len(ms[n].times) for n in order}
        for name in order[k:] + order[:k]:
            if name == "fixit" and len(ms[name].times) >= fixit_reps:
                continue
            t = fixit_timeout if name == "fixit" else timeout
            timed(ms[name], cmds[name], command_cwd(corpus, name), t)
        slowdown = two_core_slowdown()
        slowdowns.append(slowdown)
        print(f"  rep {rep + 1}/{reps}: " + ", ".join(
            f"{n}={ms[n].times[-1]:.3f}s" if ms[n].status == "ok" and len(ms[n].times) == before[n] + 1
            else f"{n}={ms[n].status}" if ms[n].status != "ok" else f"{n}=(done)"
            for n in order) + ("" if slowdown is None else f", two-core slowdown={slowdown:.2f}"), flush=True)
    return ms, slowdowns


def fmt_s(x: float | None) -> str:
    return "-" if x is None else (f"{x:.3f}" if x < 10 else f"{x:.1f}")


def tool_version(cmd: list[str] | None, *args: str) -> str:
    if not cmd:
        return "not found"
    try:
        r = subprocess.run([*cmd, *args], capture_output=True, text=True, timeout=60, env=TOOL_ENV)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"error: {e}"
    if r.returncode != 0:
        return f"error (exit {r.returncode}): {(r.stderr or r.stdout).strip().splitlines()[-1:] or ''}"
    return (r.stdout or r.stderr).strip().splitlines()[0] if (r.stdout or r.stderr).strip() else "?"


def ok_medians(measurements: dict) -> dict[str, float | None]:
    """Medians of measurements that never failed. A tool that ran for a few repetitions and then
    broke (e.g. the code under test changed mid-run) gives no figure for the targets."""
    return {k: (m["median_s"] if m["status"] == "ok" else None) for k, m in measurements.items()}


def ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def paired_ratios(measurements: dict, top: str, bottom: str) -> list[float]:
    """``top / bottom`` of each repetition in which both ran (they alternate, so the two runs
    of a pair met the same load on the machine): the spread around the ratio of medians."""
    a, b = measurements.get(top), measurements.get(bottom)
    if not a or not b or a["status"] != "ok" or b["status"] != "ok":
        return []
    return [x / y for x, y in zip(a["times"], b["times"]) if y]


def quiet_ratios(measurements: dict, top: str, bottom: str, slowdowns: list, limit: float) -> list[float]:
    """``paired_ratios`` of the repetitions whose two-core slowdown was at most ``limit``: both
    cores free, as when the two tools are compared on an idle machine. Empty unless every
    repetition of both measures ran (only then do their times line up with the slowdowns)."""
    ratios = paired_ratios(measurements, top, bottom)
    if not ratios or len(ratios) != len(slowdowns) or len(measurements[top]["times"]) != len(slowdowns):
        return []
    return [r for r, slowdown in zip(ratios, slowdowns) if slowdown is not None and slowdown <= limit]


def spread_line(label: str, ratios: list[float], threshold: float) -> str:
    ordered = sorted(ratios)
    over = sum(r > threshold for r in ordered)
    return (f"    {label} per repetition: min {ordered[0]:.2f}, median {statistics.median(ordered):.2f}, "
            f"max {ordered[-1]:.2f}; {over} of {len(ordered)} over {threshold}")


QUIET_SLOWDOWN = 1.15  # a repetition at or under this two-core slowdown had both cores (nearly) free


def quiet_line(corpus: dict, pair: tuple[str, str], threshold: float) -> str:
    """The cold/ruff ratios of the quiet repetitions alone, for reference: how the target reads
    when the machine gives the two processes of a cold run a core each."""
    slowdowns = corpus.get("two_core_slowdown_per_repetition") or []
    quiet = quiet_ratios(corpus["measurements"], *pair, slowdowns, QUIET_SLOWDOWN)
    label = f"{pair[0]}/{pair[1]} in quiet repetitions (two-core slowdown <= {QUIET_SLOWDOWN})"
    if len(paired_ratios(corpus["measurements"], *pair)) != len(slowdowns) or not slowdowns:
        return f"    {label}: n/a (not every repetition of both measures ran)"
    if not quiet:
        return f"    {label}: none of {len(slowdowns)}"
    over = sum(r > threshold for r in quiet)
    return (f"    {label}: median {statistics.median(quiet):.2f} over {len(quiet)} of {len(slowdowns)}; "
            f"{over} over {threshold}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="timed repetitions per tool (default 5)")
    ap.add_argument("--fixit-reps", type=int, default=1, help="repetitions for Fixit (default 1; it is slow)")
    ap.add_argument("--skip-fixit", action="store_true", help="do not run Fixit")
    ap.add_argument("--quick", action="store_true",
                    help="3 repetitions, no Fixit, synthetic sizes 50 and 500, 1 repetition each")
    ap.add_argument("--sizes", default="50,500,5000", help="synthetic tree sizes (default 50,500,5000)")
    ap.add_argument("--synthetic-reps", type=int, default=3, help="repetitions per synthetic size (default 3)")
    ap.add_argument("--skip-synthetic", action="store_true")
    ap.add_argument("--corpora", default="mb-0.3.1,mb-0.6.2", help="real corpora to measure")
    ap.add_argument("--wheels-dir", type=Path, default=None,
                    help="use megatron_bridge wheels from this folder instead of downloading")
    ap.add_argument("--mblint", default=None, help='command for mblint, e.g. "python -m mblint"')
    ap.add_argument("--baseline-mblint", default=None,
                    help="command for another mblint build (e.g. the commit before a change), timed as "
                         "cold-baseline in the same repetitions, for a before/after comparison")
    ap.add_argument("--timeout", type=float, default=600, help="per-run timeout in seconds")
    ap.add_argument("--fixit-timeout", type=float, default=1800)
    ap.add_argument("--json", type=Path, default=RESULTS_DIR / "latest.json")
    args = ap.parse_args(argv)
    if args.quick:
        args.reps = min(args.reps, 3)
        args.skip_fixit = True
        args.sizes = "50,500"
        args.synthetic_reps = 1
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()] if not args.skip_synthetic else []

    tools = {
        "mblint": shlex.split(args.mblint) if args.mblint else find_tool("mblint"),
        "ruff": find_tool("ruff"),
        "fixit": None if args.skip_fixit else find_tool("fixit"),
        "baseline": shlex.split(args.baseline_mblint) if args.baseline_mblint else None,
    }
    for name, cmd in tools.items():
        if cmd is None and not (name == "fixit" and args.skip_fixit) and name != "baseline":
            print(f"WARNING: {name} not found next to {sys.executable} nor on PATH; {INSTALL_HINT}"
                  if name != "mblint" else
                  "WARNING: mblint not found; install the project: pip install -e .", flush=True)
    versions = {
        "mblint": tool_version(tools["mblint"], "--version"),
        "ruff": tool_version(tools["ruff"], "--version"),
        "fixit": tool_version(tools["fixit"], "--version") if tools["fixit"] else "skipped",
        "python": platform.python_version(),
    }
    print("tools:", ", ".join(f"{k} {v}" for k, v in versions.items()), flush=True)

    wanted = [c.strip() for c in args.corpora.split(",") if c.strip()]
    prepared = prepare_corpus.prepare(args.wheels_dir)
    corpora = []
    for version, root in prepared.items():
        name = f"mb-{version}"
        if name in wanted:
            c = Corpus.load(name, root)
            c.pick_one_file()
            c.package_root = package_root_for(version, c)
            corpora.append(c)

    results: dict = {
        "meta": {
            "date": _dt.datetime.now().isoformat(timespec="seconds"),
            "machine": platform.platform(),
            "cpu_count": os.cpu_count(),
            "python": sys.version.split()[0],
            "versions": versions,
            "reps": args.reps,
            "fixit_reps": 0 if args.skip_fixit else args.fixit_reps,
            "command": " ".join([Path(sys.argv[0]).name, *(argv if argv is not None else sys.argv[1:])]),
        },
        "corpora": {},
        "synthetic": {},
        "targets": {},
    }

    # `mblint --version` is corpus-independent: time it alternating with the first corpus.
    version_m = Measure("version", "mblint --version")
    for corpus in corpora:
        print(f"\n== {corpus.name}: {len(corpus.files)} files, {corpus.lines} lines "
              f"(one file: {corpus.one_file}) ==", flush=True)
        ms, slowdowns = measure_corpus(corpus, tools, args.reps, args.fixit_reps, args.skip_fixit,
                                       args.timeout, args.fixit_timeout)
        if version_m.status == "pending":
            for _ in range(args.reps):
                timed(version_m, tools["mblint"] and [*tools["mblint"], "--version"], corpus.root, 60)
        mem = None
        if tools["mblint"]:
            mem = peak_memory([*tools["mblint"], "check", "--no-cache", *corpus.files], corpus.root, args.timeout)
            mem["command"] = "mblint check --no-cache FILES"
            if mem["returncode"] == 2 and ms["warm"].status == "ok":
                # --no-cache not understood (yet): measure a plain run instead, and say so.
                mem = peak_memory([*tools["mblint"], "check", *corpus.files], corpus.root, args.timeout)
                mem["command"] = "mblint check FILES (--no-cache was rejected)"
        results["corpora"][corpus.name] = {
            "root": str(corpus.root),
            "files": len(corpus.files),
            "lines": corpus.lines,
            "one_file": corpus.one_file,
            "large_file": corpus.large_file,
            "package_root": str(corpus.package_root) if corpus.package_root else None,
            "measurements": {k: m.to_json() for k, m in ms.items()},
            "memory": mem,
            "two_core_slowdown": [x for x in slowdowns if x is not None],
            "two_core_slowdown_per_repetition": slowdowns,
        }
    results["version"] = version_m.to_json()

    for n in sizes:
        corpus = synthetic_corpus(n)
        print(f"\n== {corpus.name}: {len(corpus.files)} files, {corpus.lines} lines ==", flush=True)
        cmds = {k: v for k, v in commands(corpus, tools, True).items() if k in SYNTHETIC_MEASURES}
        if n > AST_KEEP_MAX_MODULES:
            del cmds["ast"]  # minutes of garbage-collector churn, and GBs of RSS, for no new insight
        ms = {k: Measure(k, display(c, corpus, k)) for k, c in cmds.items()}
        order = list(cmds)
        for rep in range(args.synthetic_reps):
            k = rep % len(order)
            for name in order[k:] + order[:k]:
                timed(ms[name], cmds[name], corpus.root, args.timeout)
            print(f"  rep {rep + 1}/{args.synthetic_reps}: " + ", ".join(
                f"{nm}={ms[nm].times[-1]:.3f}s" if ms[nm].status == "ok" else f"{nm}={ms[nm].status}"
                for nm in order), flush=True)
        kloc = corpus.lines / 1000
        results["synthetic"][str(n)] = {
            "files": len(corpus.files),
            "lines": corpus.lines,
            "measurements": {k: m.to_json() for k, m in ms.items()},
            "s_per_kloc": {k: (m.median / kloc if m.status == "ok" and m.median is not None else None)
                           for k, m in ms.items()},
        }

    # ------------------------------------------------------------------ report
    print()
    for cname, c in results["corpora"].items():
        print(f"{cname}: {c['files']} files, {c['lines']} lines; medians in seconds")
        print(f"  {'measure':<18}{'median':>9}{'min':>9}{'cpu':>9}{'n':>4}  status / command")
        shown_errors: dict[str, str] = {}
        for name, m in c["measurements"].items():
            st = m["status"] if m["status"] != "ok" else m["cmd_display"]
            print(f"  {name:<18}{fmt_s(m['median_s']):>9}{fmt_s(m['min_s']):>9}"
                  f"{fmt_s(m.get('cpu_median_s')):>9}{len(m['times']):>4}  {st}")
            if m["error"] and m["error"] in shown_errors:
                print(f"      (same error as {shown_errors[m['error']]})")
            elif m["error"]:
                shown_errors[m["error"]] = name
                print("      " + m["error"][:800].replace("\n", "\n      "))
        mem = c["memory"]
        if mem:
            print(f"  peak memory ({mem['command']}): {mem['peak_mb']} MB "
                  f"(single process max RSS {mem['max_rss_single_process_mb']} MB, "
                  f"process tree sampled {mem['peak_rss_tree_sampled_mb']} MB)"
                  + ("" if mem["returncode"] in OK_CODES else
                     "  [INVALID: mblint crashed]" if mem["returncode"] == CRASH else
                     f"  [INVALID: mblint exit {mem['returncode']}]"))
        if c.get("two_core_slowdown"):
            print(f"  two-core slowdown (two CPU-bound processes at once / one alone; 1.00 = two free "
                  f"cores): median {statistics.median(c['two_core_slowdown']):.2f} over "
                  f"{len(c['two_core_slowdown'])} repetitions")
        print()
    v = results["version"]
    print(f"mblint --version: median {fmt_s(v['median_s'])} s"
          + ("" if v["status"] == "ok" else f"  [{v['status']}] {v['error'][:300]}"))
    if results["synthetic"]:
        print("\nsynthetic scaling (median seconds, seconds per 1000 lines)")
        print(f"  {'modules':>8}{'lines':>10}" + "".join(f"{k:>12}{k + '/kloc':>17}" for k in SYNTHETIC_MEASURES))
        for n, s in results["synthetic"].items():
            row = f"  {n:>8}{s['lines']:>10}"
            for k in SYNTHETIC_MEASURES:
                m = s["measurements"].get(k)
                row += f"{fmt_s(m['median_s'] if m else None):>12}"
                pk = s["s_per_kloc"].get(k)
                row += f"{('-' if pk is None else f'{pk:.4f}'):>17}"
            print(row)

    # Targets on the main-sized corpus.
    main_c = results["corpora"].get(MAIN_CORPUS) or next(iter(results["corpora"].values()), None)
    t: dict[str, float | None] = {}
    if main_c:
        med = ok_medians(main_c["measurements"])
        t["cold_over_ruff"] = ratio(med.get("cold"), med.get("ruff"))
        t["warm_over_ruff"] = ratio(med.get("warm"), med.get("ruff"))
        t["fixit_over_cold"] = ratio(med.get("fixit"), med.get("cold"))
        t["one_file_s"] = med.get("one-file")
        t["one_file_nocache_s"] = med.get("one-file-nocache")
        t["cold_over_ruff_34"] = t["cold_over_ruff"]
        t["warm_over_ruff_34"] = t["warm_over_ruff"]
        t["one_file_large_s"] = med.get("one-file-large")
        t["one_file_large_nocache_s"] = med.get("one-file-large-nocache")
        t["one_file_large_edited_s"] = med.get("one-file-large-edited")
        t["peak_rss_mb"] = (main_c["memory"] or {}).get("peak_mb") if main_c["memory"] and \
            main_c["memory"]["returncode"] in OK_CODES else None
    syn = results["synthetic"]
    if "500" in syn and "5000" in syn:
        t["per_kloc_5000_over_500"] = ratio(syn["5000"]["s_per_kloc"].get("cold"), syn["500"]["s_per_kloc"].get("cold"))
    print(f"\ntargets (issue 6, then issue 34), judged on {MAIN_CORPUS if MAIN_CORPUS in results['corpora'] else 'first corpus'}:")
    failed = 0
    for key, desc, op, thr in TARGETS:
        val = t.get(key)
        if val is None:
            verdict = "n/a"
        else:
            ok = val <= thr if op == "<=" else val >= thr if op == ">=" else val < thr
            verdict = "PASS" if ok else "FAIL"
            failed += not ok
        shown = "-" if val is None else f"{val:.3f}"
        print(f"  {desc:<48}{shown:>10}  target {op} {thr:<6}  {verdict}")
        results["targets"][key] = {"description": desc, "value": val, "op": op, "threshold": thr, "verdict": verdict}
        pair = PAIRED.get(key)
        if main_c and pair:
            ratios = paired_ratios(main_c["measurements"], *pair)
            if ratios:
                print(spread_line(f"{pair[0]}/{pair[1]}", ratios, thr))
                results["targets"][key]["per_repetition"] = ratios
            if key in ("cold_over_ruff", "cold_over_ruff_34"):
                print(quiet_line(main_c, pair, thr))
    if main_c:
        med = ok_medians(main_c["measurements"])
        thresholds = {key: thr for key, _, _, thr in TARGETS}
        for key, (top, bottom, like) in REFERENCE.items():
            value = ratio(med.get(top), med.get(bottom))
            if value is None:
                continue
            print(f"  {'mblint ' + top + ' / ' + bottom:<48}{value:>10.3f}  reference, not a target")
            ratios = paired_ratios(main_c["measurements"], top, bottom)
            if ratios:
                print(spread_line(f"{top}/{bottom}", ratios, like if isinstance(like, float) else thresholds[like]))
            results.setdefault("reference", {})[key] = {"value": value, "per_repetition": ratios}
        cpu = ratio(main_c["measurements"].get("cold", {}).get("cpu_median_s"),
                    main_c["measurements"].get("ruff", {}).get("cpu_median_s"))
        if cpu is not None and med.get("cold") is not None and med.get("ruff") is not None:
            print(f"  {'mblint cold CPU / ruff CPU (user + sys)':<48}{cpu:>10.3f}  reference: the cold wall ratio "
                  f"moves toward it when the second core is taken")
            results.setdefault("reference", {})["cold_cpu_over_ruff_cpu"] = {"value": cpu}
        if "cold-baseline" in main_c["measurements"]:
            before = ratio(med.get("cold-baseline"), med.get("ruff"))
            before_cpu = ratio(main_c["measurements"]["cold-baseline"].get("cpu_median_s"),
                               main_c["measurements"].get("ruff", {}).get("cpu_median_s"))
            shown = [f"{label} {'-' if x is None else f'{x:.3f}'}" for label, x in
                     (("cold/ruff", t.get("cold_over_ruff")), ("cold-baseline/ruff", before), ("CPU", cpu),
                      ("baseline CPU", before_cpu))]
            print("  before/after, same run: " + ", ".join(shown))
            results.setdefault("reference", {})["cold_baseline_over_ruff"] = {"value": before, "cpu": before_cpu}
    for cname, c in results["corpora"].items():
        if cname == (MAIN_CORPUS if MAIN_CORPUS in results["corpora"] else None):
            continue
        med = ok_medians(c["measurements"])
        extra = {
            "cold/ruff": ratio(med.get("cold"), med.get("ruff")),
            "cold-in-package/ruff": ratio(med.get("cold-in-package"), med.get("ruff")),
            "cold-in-package/cold-in-package-bundled": ratio(med.get("cold-in-package"),
                                                             med.get("cold-in-package-bundled")),
            "cold-in-package-derive/cold-in-package-bundled": ratio(med.get("cold-in-package-derive"),
                                                                    med.get("cold-in-package-bundled")),
            "warm/ruff": ratio(med.get("warm"), med.get("ruff")),
            "fixit/cold": ratio(med.get("fixit"), med.get("cold")),
            "fixit/ruff": ratio(med.get("fixit"), med.get("ruff")),
        }
        print(f"  ({cname}: " + ", ".join(f"{k} {'-' if x is None else f'{x:.2f}'}" for k, x in extra.items()) + ")")

    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=1))
    print(f"\nresults written to {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
