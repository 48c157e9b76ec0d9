"""Would a memo of rule calls pay? An experiment for issue 34, not part of mblint.

Issue 34 proposes to run each rule once per distinct tuple of the values it reads. This probe
measures what such a memo could save on a real run, without changing the engine: it runs the
check in this process (``-j1`` is forced) with ``RuleCalls.run`` replaced by a loop that

1. times the memo's look-up on the configuration (``replay``),
2. times the rule itself, as the engine calls it (``rule``),
3. when the rule reported nothing and the memo did not already answer, runs the rule again on
   a recording stand-in of the configuration and adds what it read (each question and its
   answer, in order) to a decision tree per rule and context: a later configuration that gives
   the same answers to the same questions is answered "no finding" by the tree.

A memo hit is sound only when every input of the rule is one of the recorded questions; the
probe checks its own hits (a hit on a call that reports something is counted as ``wrong``).

    python benchmarks/rule_memo_probe.py check --no-cache FILES

prints the number of rule calls, the hits, the time the rules took on the calls that hit and
the time the look-ups took on them. The memo pays only if the look-up is much cheaper than the
rule.
"""

from __future__ import annotations

import collections
import io
import os
import sys
import time

sys.path[0] = os.path.dirname(sys.executable)  # run as a script: the installed mblint, not benchmarks/

from mblint import model, rule_run  # noqa: E402

QUERIES = {"value", "get", "type_of", "child_types", "origins", "last_kind", "last_origin", "keys",
           "keys_outside", "extra_fields", "children", "from_command_line"}
MISSING = object()


class RecordingDerived:
    """``cfg.derived`` (the per-configuration memo of rulekit.per_config) that records reads."""

    def __init__(self, real: dict, trace: list) -> None:
        self.real, self.trace = real, trace

    def get(self, name, default=None):
        found = self.real.get(name, default)
        self.trace.append((("derived", name), (), found))
        return found

    def __setitem__(self, name, found) -> None:
        self.real[name] = found


class RecordingConfig:
    """Stands in for an EffectiveConfig and records every question asked of it."""

    def __init__(self, real: model.EffectiveConfig) -> None:
        object.__setattr__(self, "_real", real)
        object.__setattr__(self, "_trace", [])

    def __getattr__(self, name):
        attribute = getattr(self._real, name)
        trace = self._trace
        if name in QUERIES:
            def ask(*args):
                answer = attribute(*args)
                answer = list(answer) if name == "children" else answer
                trace.append((name, args, answer))
                return answer
            return ask
        if name == "derived":
            return RecordingDerived(attribute, trace)
        trace.append((("attr", name), (), attribute))
        return attribute


def answer_key(answer):
    """What a tree branch is keyed by: the answer with its type (1, True and 1.0 differ), the
    reason of an unknown; None when the answer cannot be a key (then the trace is not kept)."""
    if type(answer) is model.Unknown:
        return (model.Unknown, answer.reason)
    if type(answer).__name__ == "_NodeMarker":
        return ("node", repr(answer))
    try:
        hash(answer)
    except TypeError:
        return None
    return (type(answer), answer)


def ask(cfg, question):
    key, args = question
    if type(key) is str:
        answer = getattr(cfg, key)(*args)
        return list(answer) if key == "children" else answer
    if key[0] == "attr":
        return getattr(cfg, key[1])
    return cfg.derived.get(key[1], MISSING)


def add_trace(tree: dict, trace: list) -> bool:
    node = tree
    for key, args, answer in trace:
        branch = answer_key(answer)
        if branch is None or node.get("question", (key, args)) != (key, args):
            return False
        node["question"] = (key, args)
        node = node.setdefault(branch, {})
    node["no finding"] = True
    return True


def memo_says_no_finding(tree: dict, cfg) -> bool:
    node = tree
    while "no finding" not in node:
        question = node.get("question")
        if question is None:
            return False
        answer = ask(cfg, question)
        branch = answer_key(answer) if answer is not MISSING else None
        node = node.get(branch) if branch is not None else None
        if node is None:
            return False
    return True


counts: collections.Counter = collections.Counter()
seconds: collections.Counter = collections.Counter()
trees: dict = collections.defaultdict(dict)


def probing_run(self, cfg, findings, notes) -> None:
    for rule, ctx in self.pairs:
        tree = trees[(type(rule), id(ctx))]
        start = time.perf_counter()
        hit = memo_says_no_finding(tree, cfg)
        looked_up = time.perf_counter()
        found = list(rule.check(cfg, ctx) or ())
        ran = time.perf_counter()
        findings.extend(found)
        counts["calls"] += 1
        seconds["rule, all calls"] += ran - looked_up
        seconds["look-up, all calls"] += looked_up - start
        if hit:
            counts["hits"] += 1
            counts["wrong hits"] += bool(found)
            seconds["rule, calls that hit"] += ran - looked_up
            seconds["look-up, calls that hit"] += looked_up - start
        elif not found:
            recording = RecordingConfig(cfg)
            list(rule.check(recording, ctx) or ())  # many checks are generators
            counts["traces kept" if add_trace(tree, recording._trace) else "traces not keyable"] += 1


def main(argv: list[str]) -> None:
    rule_run.RuleCalls.run = probing_run
    from mblint import cli

    stdout, sys.stdout = sys.stdout, io.StringIO()
    try:
        cli.main([*argv, "-j1"])
    except SystemExit:
        pass
    finally:
        sys.stdout = stdout
    for name, number in counts.items():
        print(f"{name:28} {number:>9,}")
    for name, total in seconds.items():
        print(f"{name:28} {total:9.3f} s")


if __name__ == "__main__":
    main(sys.argv[1:])
