"""Comparing a case's plain run with its PYTHONPOPPY=1 run, modulo the annotations.

The rules (from docs/annotations.md and the README's table of classes; `unannotated` externals
are sequential, the default):

* printed output: identical, byte for byte (print is sequential, so is every write);
* result: the same repr of the return value, or the same exception type, message and
  `__cause__`/`__context__` chain;
* sequential calls (`@sequential`, unannotated): the same calls, with the same arguments, in
  exactly the same order, each after the same amount of printed output (so also in the same
  place relative to every print);
* readonly calls (`@readonly`): may be reordered among readonly calls between two sequential
  calls, never across one (nor across a print): the same multiset of (number of sequential calls
  before it, amount of output before it, name, arguments);
* unordered calls (`@unordered`): the same multiset of (name, arguments) over the case. One
  relaxation, the documented limitation (docs/annotations.md, "Known limitations"): when both runs
  end with the same exception (type and message), unordered calls that CPython never reached may already have been
  dispatched in parallel with the failing call — extra unordered calls are accepted then, missing
  ones never are;
* the concurrency controller (PopPy §6.2), checked on the PYTHONPOPPY=1 run: a sequential call
  never starts while a readonly or sequential call is in flight, a readonly call never while a
  sequential one is (calls nested in another external's execution excepted).

A call is recorded when it starts (`prelude`). Calls made while an external that calls other
externals runs (a generator expression consumed by `s_consume`, the helper `n_via`) are marked
nested and left out of the controller check (they run inside that external, by its own order).

Pure functions of the recorded data; depends on nothing else in poppy_jit.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

KINDS = ("output", "result", "sequential", "readonly", "unordered", "controller", "crash",
         "timeout", "missing", "exit")


@dataclass(frozen=True)
class Mismatch:
    kind: str      # one of KINDS (crash/timeout/exit: judged by the runner at process level)
    detail: str

    def __str__(self) -> str:
        return f"{self.kind}: {self.detail}"


def _seq(calls: list) -> list:
    return [(c["name"], c["args"], c["pos"]) for c in calls if c["kind"] == "sequential"]


def _readonly(calls: list) -> Counter:
    out, seg = Counter(), 0
    for c in calls:
        if c["kind"] == "sequential":
            seg += 1
        elif c["kind"] == "readonly":
            out[(seg, c["pos"], c["name"], c["args"])] += 1
    return out


def _unordered(calls: list) -> Counter:
    return Counter((c["name"], c["args"]) for c in calls if c["kind"] == "unordered")


def canonical(calls: list) -> dict:
    """The trace with every permitted reordering normalised away (readonly calls sorted within
    their segment, unordered calls sorted): two traces are equivalent iff these are equal
    (ignoring the failure relaxation)."""
    return {"sequential": _seq(calls), "readonly": sorted(_readonly(calls).elements()),
            "unordered": sorted(_unordered(calls).elements())}


def canonical_text(calls: list) -> str:
    """`canonical(calls)` as the lines a standalone reproducer prints."""
    can = canonical(calls)
    lines = [f"trace sequential: {[f'{n}{a}@{p}' for n, a, p in can['sequential']]}",
             f"trace readonly: {[f'{n}{a}@{s}.{p}' for s, p, n, a in can['readonly']]}",
             f"trace unordered: {[f'{n}{a}' for n, a in can['unordered']]}"]
    return "\n".join(lines) + "\n"


def compare_calls(plain: list, popped: list, failed: bool = False, spec_calls: int = 0) -> list:
    """Mismatches between two traces of one call (lists of records, in start order).
    `failed`: both runs raised the same exception (extra unordered calls allowed, and extra
    readonly calls after the last sequential call: both run speculatively, without effects,
    and no sequential call runs after a failing one — docs/semantics.md "Errors").
    `spec_calls`: the unordered calls the runtime says it started ahead of a loop iteration of a
    try or with body that raised (`stats()["speculative_calls"]`): that many extra are allowed."""
    problems = []
    sp, sq = _seq(plain), _seq(popped)
    if sp != sq:
        problems.append(Mismatch("sequential", _first_diff(sp, sq)))
    rp, rq = _readonly(plain), _readonly(popped)
    speculative = failed and not rp - rq and all(k[0] == len(sp) for k in rq - rp)
    if rp != rq and not speculative:
        problems.append(Mismatch("readonly", f"missing under poppy {dict(rp - rq)}, "
                                             f"extra under poppy {dict(rq - rp)}"))
    up, uq = _unordered(plain), _unordered(popped)
    if up != uq and (up - uq or not (failed or sum((uq - up).values()) <= spec_calls)):
        problems.append(Mismatch("unordered", f"missing under poppy {dict(up - uq)}, "
                                              f"extra under poppy {dict(uq - up)}"))
    return problems


def check_controller(calls: list) -> list:
    """Calls that started while a call they must not overlap was in flight."""
    bad = []
    for c in calls:
        if c.get("nested"):
            continue
        busy = set(c.get("busy", ()))
        if c["kind"] == "sequential" and busy & {"readonly", "sequential"}:
            bad.append(f"{c['name']}{c['args']} started while {sorted(busy)} in flight")
        elif c["kind"] == "readonly" and "sequential" in busy:
            bad.append(f"{c['name']}{c['args']} started while a sequential call was in flight")
    return [Mismatch("controller", "; ".join(bad))] if bad else []


def compare_entry(plain: dict, popped: dict) -> list:
    """Mismatches between the reports of one `run_case` call (see prelude.run_case)."""
    problems = []
    if plain["out"] != popped["out"]:
        problems.append(Mismatch("output", _first_diff(plain["out"].splitlines(),
                                                       popped["out"].splitlines())))
    if plain["result"] != popped["result"]:
        problems.append(Mismatch("result", f"plain {plain['result']!r}, "
                                           f"poppy {popped['result']!r}"))
    failed = (plain["result"].startswith("!!") and
              _exception_only(plain["result"]) == _exception_only(popped["result"]))
    problems += compare_calls(plain["calls"], popped["calls"], failed, popped.get("speculative", 0))
    problems += check_controller(popped["calls"])
    return problems


def compare_case(plain: list, popped: list) -> list:
    """Mismatches between the plain and poppy reports of one case (a list of `run_case` reports,
    one per call of the case's function)."""
    problems = []
    for k, (a, b) in enumerate(zip(plain, popped)):
        problems += compare_entry(a, b)
    if len(plain) != len(popped):
        problems.append(Mismatch("missing", f"plain made {len(plain)} call(s), "
                                            f"poppy reported {len(popped)}"))
    return problems


def _exception_only(result: str) -> str:
    """'!! Type: message' without the '[context ...]'/'[cause ...]' chain."""
    return result.split(" [context ", 1)[0].split(" [cause ", 1)[0]


def _first_diff(a: list, b: list) -> str:
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first difference at #{k}: plain {x!r}, poppy {y!r}"
    if len(a) != len(b):
        k = min(len(a), len(b))
        return (f"plain has {len(a)} item(s), poppy {len(b)}; from #{k}: plain {a[k:k + 3]!r}, "
                f"poppy {b[k:k + 3]!r}")
    return "equal"
