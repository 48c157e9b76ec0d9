#!/usr/bin/env python
"""Mutation probe: does mblint flag a single bad edit to a real recipe, on the edited line?

A development tool (not part of the test suite). It measures what the rule pack does on
"real recipes with one setting changed to something Megatron-Bridge rejects or silently
mishandles", and compares it with Megatron-Bridge's own verdict (the oracle).

What it does
------------
1. Picks recipe functions from an unpacked Megatron-Bridge 0.6.2 wheel (``ROOT/megatron/bridge``):
   the H100 recipes of llama3, qwen3, qwen3_moe, deepseek_v3, nemotronh / nemotron_3, gpt_oss,
   glm, and the H100 perf_recipes of the same families.
2. Finds single-line assignments ``cfg.<a>.<b>... = <expr>`` at the top level of each function
   body, and mutates one line at a time: the value is replaced by a plausible-but-bad value from
   ``BAD_VALUES`` (keyed by the field's leaf name), or the field's leaf name is misspelt
   (``--typos``). Mutations are sampled (``--limit``, ``--seed``), spread over fields and files.
3. mblint: the mutated file is written into a temporary COPY of the wheel tree (one copy per
   worker, ``--jobs``), and ``python -m mblint check FILE --no-cache --format json
   --world-size N`` is run on it (N from the recipe's ``_<N>gpu_`` part, else 8). A mutation is a
   hit when an error-level finding of that recipe lands on the mutated line. Findings that are
   new compared with the unmutated file are recorded too ("what else fires").
4. Oracle (``/work/shared/oracle/oracle.py --batch --json``, one batch per run): two questions
   per mutation, same world size:
     * ``module``: the mutated file itself, imported as a stand-alone module ``mut_NNNN`` (the
       H100 recipe files only use absolute imports), so later lines, helper calls and derived
       values behave exactly as in the mutated recipe. This is the verdict used.
     * ``setattr``: the mutation applied as a setattr override of the same field on the original
       recipe (``train.micro_batch_size=2``); typos use ``+path=value``. Reported when it
       disagrees with ``module`` (e.g. the line is overwritten later in the recipe).
   plus the unmutated recipe as a baseline. Recipes that fail to build (no offline HF config) or
   whose baseline already fails are "oracle n/a".
5. Prints a confusion table (oracle FAIL/OK/n.a. x mblint error-on-line / warning-on-line /
   error elsewhere / silent) and the list of MISSes (oracle FAIL without an error on the line)
   and possible false positives (oracle OK with an error on the line: check by reading MB
   source whether MB fails later, at model build or distributed init, which the oracle does
   not run). Full per-mutation records go to ``OUT/results.jsonl``.

Usage
-----
    /work/venv/bin/python scripts/mutation_probe.py [--wheel ROOT] [--limit 300] [--seed 0]
        [--jobs 4] [--out /tmp/mutprobe] [--no-oracle] [--typos 40] [--only FIELD ...]

Run from a worktree: mblint is run with PYTHONPATH set to this script's repository, so the
worktree's rules are the ones measured. The oracle needs /tmp/mb-oracle (see
/work/shared/oracle/README.md). Budget: ~1 s per mutation for mblint (parallel), ~0.3-1 s per
oracle case after a 20 s import.
"""

from __future__ import annotations

import argparse
import ast
import collections
import concurrent.futures
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_WHEEL = Path("/root/.cache/mblint-tests/megatron-bridge-0.6.2")
ORACLE_PY = "/tmp/mb-oracle/bin/python"
ORACLE = "/work/shared/oracle/oracle.py"
MBLINT_PY = "/work/venv/bin/python"

# Files (relative to megatron/bridge) sampled, per family.
FILES = [
    "recipes/llama/h100/llama3.py",
    "recipes/qwen/h100/qwen3.py",
    "recipes/qwen/h100/qwen3_moe.py",
    "recipes/deepseek/h100/deepseek_v3.py",
    "recipes/nemotronh/h100/nemotronh.py",
    "recipes/nemotronh/h100/nemotron_3_nano.py",
    "recipes/gpt_oss/h100/gpt_oss.py",
    "recipes/glm/h100/glm45.py",
    "perf_recipes/llama/h100/llama3.py",
    "perf_recipes/llama/h100/llama31.py",
    "perf_recipes/qwen/h100/qwen3_moe.py",
    "perf_recipes/deepseek/h100/deepseek_v3.py",
    "perf_recipes/gpt_oss/h100/gpt_oss.py",
    "perf_recipes/nemotronh/h100/nemotronh.py",
]

# Plausible-but-bad values per field leaf name (Python source text).
BAD_VALUES: dict[str, list[str]] = {
    "micro_batch_size": ["2", "4"],
    "context_parallel_size": ["2", "3", "4"],
    "tensor_model_parallel_size": ["3", "8"],
    "pipeline_model_parallel_size": ["2", "3"],
    "virtual_pipeline_model_parallel_size": ["2"],
    "expert_model_parallel_size": ["3"],
    "expert_tensor_parallel_size": ["2"],
    "sequence_parallel": ["True", "False"],
    "seq_length": ["1000", "4097"],
    "pad_seq_to_mult": ["1", "3"],
    "packed_sequence_size": ["1000", "-1"],
    "cuda_graph_impl": ['"local"', '"full_iteration"', '"transformer_engine"'],
    "cuda_graph_scope": ['"full_iteration"', '"attn"'],
    "use_te_rng_tracker": ["False"],
    "recompute_granularity": ['"full"', '"selective"'],
    "recompute_method": ["None"],
    "recompute_num_layers": ["None", "2"],
    "calculate_per_token_loss": ["False"],
    "average_in_collective": ["True"],
    "moe_token_dispatcher_type": ['"alltoall"', '"allgather"', '"flex"'],
    "moe_flex_dispatcher_backend": ['"hybridep"'],
    "global_batch_size": ["7", "100"],
    "enable_offline_packing": ["True", "False"],
    "pad_to_max_length": ["False"],
    "pad_cu_seqlens": ["True"],
    "mixed_precision": ['"bf16-mix"', '"bf16_mixd"'],
    "cp_comm_type": ['"a2a+p2p"', '"allgather"'],
    "cpu_offloading": ["True"],
    "use_distributed_optimizer": ["False"],
    "overlap_param_gather": ["True"],
    "check_for_nan_in_loss": ["True"],
    "num_layers_in_first_pipeline_stage": ["3"],
    "num_layers_in_last_pipeline_stage": ["3"],
    "pipeline_model_parallel_layout": ['"Et*3|(tt|)*29m|L"'],
    "moe_shared_expert_overlap": ["True"],
    "overlap_moe_expert_parallel_comm": ["True"],
    "delay_wgrad_compute": ["True"],
    "account_for_embedding_in_pipeline_split": ["True"],
    "account_for_loss_in_pipeline_split": ["True"],
    "bf16": ["False"],
    "fp16": ["True"],
    "eval_iters": ["10"],
    "lr": ["None"],
    "min_lr": ["1.0"],
    "max_lr": ["3e-4"],
    "train_iters": ["0"],
    "exp_avg_dtype": ["torch.bfloat16"],
    "num_workers": ["-1"],
    "hierarchical_context_parallel_sizes": ["[2, 2]"],
    "tp_comm_overlap": ["True"],
    "defer_embedding_wgrad_compute": ["True"],
    "gradient_accumulation_fusion": ["False"],
    "moe_router_dtype": ['"bf16"'],
    "attention_backend": ['"flash"'],
    "fine_grained_activation_offloading": ["True"],
}

GPU = re.compile(r"_(\d+)gpu_")


def typo_of(name: str, rng: random.Random) -> str:
    """A misspelling: drop, double or swap one inner letter (never the identical name)."""
    for _ in range(20):
        i = rng.randrange(1, max(2, len(name) - 1))
        kind = rng.choice(("drop", "double", "swap"))
        if kind == "drop":
            new = name[:i] + name[i + 1:]
        elif kind == "double":
            new = name[:i] + name[i] + name[i:]
        else:
            new = name[: i - 1] + name[i] + name[i - 1] + name[i + 1:]
        if new != name and new.isidentifier():
            return new
    return name + "s"


@dataclass
class Site:
    rel: str          # file path relative to megatron/bridge
    module: str       # dotted module name
    function: str
    line: int
    path: str         # dotted field path after cfg.
    original: str     # the whole original line
    value: str        # original value source
    tail: str = ""    # text after the statement (a trailing comment)


@dataclass
class Mutation:
    id: str
    site: Site
    kind: str         # value | typo
    new_line: str
    new_value: str
    new_path: str
    world_size: int
    mblint: dict = field(default_factory=dict)
    oracle: dict = field(default_factory=dict)
    oracle_setattr: dict = field(default_factory=dict)
    baseline: dict = field(default_factory=dict)


def attr_chain(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name) and node.id == "cfg" and parts:
        return list(reversed(parts))
    return None


def find_sites(root: Path, rel: str) -> list[Site]:
    path = root / "megatron" / "bridge" / rel
    text = path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    module = "megatron.bridge." + rel[:-3].replace("/", ".")
    sites = []
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_") or not fn.name.endswith("_config"):
            continue
        for stmt in fn.body:
            if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and stmt.lineno == stmt.end_lineno):
                continue
            chain = attr_chain(stmt.targets[0])
            if not chain:
                continue
            line = lines[stmt.lineno - 1]
            tail = line.encode()[stmt.end_col_offset:].decode()
            sites.append(Site(rel, module, fn.name, stmt.lineno, ".".join(chain), line,
                              ast.get_source_segment(text, stmt.value), tail))
    return sites


def make_mutations(sites: list[Site], limit: int, typos: int, seed: int, only: set[str] | None) -> list[Mutation]:
    rng = random.Random(seed)
    by_field: dict[tuple[str, str], list[Mutation]] = collections.defaultdict(list)
    typo_pool = []
    for s in sites:
        leaf = s.path.rsplit(".", 1)[-1]
        m = GPU.search(f"_{s.function}_")
        ws = int(m.group(1)) if m else 8
        if only and leaf not in only:
            continue
        indent = s.original[: len(s.original) - len(s.original.lstrip())]
        for bad in BAD_VALUES.get(leaf, []):
            if bad.strip() == s.value.strip():
                continue
            new_line = f"{indent}cfg.{s.path} = {bad}{s.tail}"
            by_field[(leaf, bad)].append(Mutation("", s, "value", new_line, bad, s.path, ws))
        if not only and "." in s.path:
            typo_pool.append((s, ws))
    # spread: round-robin over (leaf, value) buckets, shuffled within each
    buckets = list(by_field.values())
    for b in buckets:
        rng.shuffle(b)
    rng.shuffle(buckets)
    chosen: list[Mutation] = []
    seen_files_per_bucket = collections.Counter()
    while len(chosen) < limit and any(buckets):
        for b in buckets:
            if b and len(chosen) < limit:
                # prefer a file not yet used for this bucket
                pick = next((i for i, m in enumerate(b) if seen_files_per_bucket[(id(b), m.site.rel)] == 0), 0)
                m = b.pop(pick)
                seen_files_per_bucket[(id(b), m.site.rel)] += 1
                chosen.append(m)
    rng.shuffle(typo_pool)
    for s, ws in typo_pool[:typos]:
        head, leaf = s.path.rsplit(".", 1)
        new_leaf = typo_of(leaf, rng)
        new_path = f"{head}.{new_leaf}"
        new_line = s.original.replace(f"cfg.{s.path}", f"cfg.{new_path}", 1)
        chosen.append(Mutation("", s, "typo", new_line, s.value, new_path, ws))
    for i, m in enumerate(chosen):
        m.id = f"mut_{i:04d}"
    return chosen


# ---------------------------------------------------------------- mblint

def run_mblint(file: Path, ws: int) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run([MBLINT_PY, "-m", "mblint", "check", str(file), "--no-cache", "--format", "json",
                           "--world-size", str(ws)], capture_output=True, text=True, env=env, cwd="/tmp")
    try:
        return json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"findings": [], "errors": [f"rc={proc.returncode} {proc.stderr[-500:]}"]}


def key(f: dict) -> tuple:
    return (f["rule"], f["severity"], f["location"]["line"], f["message"])


def mblint_worker(copy_root: Path, muts: list[Mutation], baselines: dict) -> None:
    for m in muts:
        target = copy_root / "megatron" / "bridge" / m.site.rel
        original = target.read_text()
        lines = original.splitlines(keepends=True)
        lines[m.site.line - 1] = m.new_line + "\n"
        target.write_text("".join(lines))
        try:
            out = run_mblint(target, m.world_size)
        finally:
            target.write_text(original)
        suffix = "::" + m.site.function
        mine = [f for f in out.get("findings", []) if f.get("recipe", "").endswith(suffix)]
        base = baselines.get((m.site.rel, m.world_size), {}).get(m.site.function, set())
        on_line = [f for f in mine if f["location"]["line"] == m.site.line]
        new_elsewhere = [f for f in mine if f["location"]["line"] != m.site.line and key(f) not in base]
        m.mblint = {
            "error_on_line": sorted({f["rule"] for f in on_line if f["severity"] == "error"}),
            "other_on_line": sorted({f"{f['rule']}:{f['severity']}" for f in on_line if f["severity"] != "error"}),
            "new_elsewhere": sorted({f"{f['rule']}:{f['severity']}@{f['location']['line']}" for f in new_elsewhere}),
            "messages": [f"{f['rule']}@{f['location']['line']}: {f['message']}" for f in on_line + new_elsewhere],
            "errors": out.get("errors", []),
        }


def mblint_all(root: Path, muts: list[Mutation], jobs: int, work: Path) -> None:
    copies = []
    for j in range(jobs):
        c = work / f"tree{j}"
        if not c.exists():
            shutil.copytree(root, c)
        copies.append(c)
    # baselines: unmutated findings per (file, world size), per function
    baselines: dict = {}
    for rel, ws in sorted({(m.site.rel, m.world_size) for m in muts}):
        out = run_mblint(copies[0] / "megatron" / "bridge" / rel, ws)
        per = collections.defaultdict(set)
        for f in out.get("findings", []):
            per[f["recipe"].rsplit("::", 1)[-1]].add(key(f))
        baselines[(rel, ws)] = per
    # group by file so that two workers never write the same file... each has its own copy anyway
    chunks = [muts[j::jobs] for j in range(jobs)]
    with concurrent.futures.ThreadPoolExecutor(jobs) as ex:
        list(ex.map(lambda a: mblint_worker(*a), [(copies[j], chunks[j], baselines) for j in range(jobs)]))


# ---------------------------------------------------------------- oracle

# Loaded into the oracle process through PYTHONPATH: MB retries a missing HF config four times with
# 1+2+4 s of back-off; recipes whose model is not in the oracle's offline cache then cost 7 s each.
SITECUSTOMIZE = """
import sys, time
_sleep = time.sleep
def _no_config_backoff(seconds):
    if sys._getframe(1).f_code.co_filename.endswith("safe_config_loader.py"):
        return
    _sleep(seconds)
time.sleep = _no_config_backoff
"""


def base_overrides(function: str) -> list[str]:
    """Overrides that every oracle case of this recipe gets, so that the unmutated recipe passes."""
    # PEFT recipes leave pretrained_checkpoint unset; validate() asserts it and checks it exists.
    return ["checkpoint.pretrained_checkpoint='/tmp'"] if "_peft_" in function else []


def oracle_all(root: Path, muts: list[Mutation], work: Path) -> None:
    mods = work / "mods"
    mods.mkdir(exist_ok=True)
    (mods / "sitecustomize.py").write_text(SITECUSTOMIZE)
    cases = []
    for fn in sorted({(m.site.module, m.site.function, m.world_size) for m in muts}):
        cases.append({"id": f"base|{fn[0]}:{fn[1]}|{fn[2]}", "recipe": f"{fn[0]}:{fn[1]}", "world_size": fn[2],
                      "overrides": base_overrides(fn[1])})
    for m in muts:
        src = (root / "megatron" / "bridge" / m.site.rel).read_text().splitlines(keepends=True)
        src[m.site.line - 1] = m.new_line + "\n"
        (mods / f"{m.id}.py").write_text("".join(src))
        base = base_overrides(m.site.function)
        cases.append({"id": f"mod|{m.id}", "recipe": f"{m.id}:{m.site.function}", "world_size": m.world_size,
                      "overrides": base})
        ov = f"{m.site.path}={m.new_value}"
        if m.kind == "typo":
            ov = f"+{m.new_path}={m.site.value}"
        cases.append({"id": f"set|{m.id}", "recipe": f"{m.site.module}:{m.site.function}",
                      "overrides": base + [ov], "world_size": m.world_size})
    batch = work / "cases.jsonl"
    batch.write_text("".join(json.dumps(c) + "\n" for c in cases))
    env = dict(os.environ, PYTHONPATH=str(mods))
    proc = subprocess.run([ORACLE_PY, ORACLE, "--batch", str(batch), "--json"], capture_output=True, text=True,
                          env=env, cwd=str(work))
    results = {}
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            results[r["id"]] = {k: r.get(k) for k in ("status", "exc_type", "message", "raised_at")}
    if not results:
        print("oracle produced nothing:", proc.stderr[-2000:], file=sys.stderr)
    for m in muts:
        m.baseline = results.get(f"base|{m.site.module}:{m.site.function}|{m.world_size}", {})
        m.oracle = results.get(f"mod|{m.id}", {})
        m.oracle_setattr = results.get(f"set|{m.id}", {})


# ---------------------------------------------------------------- report

def verdict(m: Mutation) -> str:
    if not m.oracle:
        return "n/a"
    if m.baseline.get("status") != "OK" or m.oracle.get("status") == "ERROR":
        return "n/a"
    return m.oracle["status"]


def lint_class(m: Mutation) -> str:
    if m.mblint.get("error_on_line"):
        return "error-on-line"
    if m.mblint.get("other_on_line"):
        return "warning-on-line"
    if any(":error@" in x for x in m.mblint.get("new_elsewhere", [])):
        return "error-elsewhere"
    return "silent"


def report(muts: list[Mutation], out: Path) -> None:
    cols = ["error-on-line", "warning-on-line", "error-elsewhere", "silent"]
    table = collections.Counter((verdict(m), lint_class(m)) for m in muts)
    print(f"\n{len(muts)} mutations  (rows: oracle verdict; cols: mblint)")
    print(f"{'':8}" + "".join(f"{c:>17}" for c in cols))
    for row in ("FAIL", "OK", "n/a"):
        print(f"{row:8}" + "".join(f"{table[(row, c)]:>17}" for c in cols))

    def show(m: Mutation) -> str:
        o = m.oracle
        return (f"  {m.id} {m.site.rel}:{m.site.line} {m.site.function} ws={m.world_size}\n"
                f"     {m.site.original.strip()}  ->  {m.new_line.strip()}\n"
                f"     oracle: {o.get('status')} {o.get('exc_type') or ''} {(o.get('message') or '')[:220]}\n"
                f"     mblint: on-line-errors={m.mblint.get('error_on_line')} other={m.mblint.get('other_on_line')} "
                f"new-elsewhere={m.mblint.get('new_elsewhere')}")

    misses = [m for m in muts if verdict(m) == "FAIL" and lint_class(m) != "error-on-line"]
    fps = [m for m in muts if verdict(m) == "OK" and lint_class(m) == "error-on-line"]
    print(f"\nMISSES ({len(misses)}): oracle FAIL, no error on the mutated line")
    for m in misses:
        print(show(m))
    print(f"\nPOSSIBLE FALSE POSITIVES ({len(fps)}): oracle OK, error on the mutated line")
    for m in fps:
        print(show(m))
    na_err = [m for m in muts if verdict(m) == "n/a" and lint_class(m) == "error-on-line"]
    print(f"\nORACLE N/A with error on line ({len(na_err)}) (judge by reading MB source):")
    for m in na_err:
        print(show(m))
    dis = [m for m in muts if m.oracle and m.oracle_setattr and verdict(m) != "n/a"
           and m.oracle.get("status") != m.oracle_setattr.get("status")]
    print(f"\nmodule vs setattr oracle disagreements ({len(dis)}):")
    for m in dis:
        print(f"  {m.id} {m.site.path}: module={m.oracle.get('status')} setattr={m.oracle_setattr.get('status')} "
              f"{(m.oracle_setattr.get('message') or '')[:120]}")
    errs = [m for m in muts if m.mblint.get("errors")]
    if errs:
        print(f"\nmblint errors on {len(errs)} mutations, e.g. {errs[0].mblint['errors'][:1]}")
    with open(out / "results.jsonl", "w") as fh:
        for m in muts:
            d = asdict(m)
            d["verdict"], d["lint"] = verdict(m), lint_class(m)
            fh.write(json.dumps(d) + "\n")
    print(f"\nper-mutation records: {out / 'results.jsonl'}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--wheel", type=Path, default=DEFAULT_WHEEL)
    ap.add_argument("--limit", type=int, default=300)
    ap.add_argument("--typos", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("/tmp/mutprobe"))
    ap.add_argument("--no-oracle", action="store_true")
    ap.add_argument("--only", nargs="*", help="only these field leaf names")
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    sites = [s for rel in FILES if (args.wheel / "megatron" / "bridge" / rel).exists() for s in find_sites(args.wheel, rel)]
    muts = make_mutations(sites, args.limit, 0 if args.only else args.typos, args.seed, set(args.only) if args.only else None)
    print(f"{len(sites)} assignment sites, {len(muts)} mutations", file=sys.stderr)
    work = Path(tempfile.mkdtemp(prefix="mutprobe-"))
    try:
        if not args.no_oracle:
            with concurrent.futures.ThreadPoolExecutor(1) as ex:
                fut = ex.submit(oracle_all, args.wheel, muts, work)
                mblint_all(args.wheel, muts, args.jobs, work)
                fut.result()
        else:
            mblint_all(args.wheel, muts, args.jobs, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    report(muts, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
