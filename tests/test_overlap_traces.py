"""The overlap analysis of `python -m poppy_jit explain` against traces of the same programs.

Each program below runs under PYTHONPOPPY=1 with PYTHONPOPPY_TRACE (one subprocess for all, a
few seconds), with latencies (50-150 ms sleeps in async externals) chosen so that what can
overlap does; some run twice with different latencies. Then, per program:

(a) every pair of call sites the analysis says may overlap did overlap in time in a traced run
    where both ran — the analysis never claims an overlap the runtime does not produce;
(b) no pair of calls that overlapped in a trace is one the analysis says never overlaps
    (pairs it leaves undecided — they depend on the order the evaluator steps calls — may).

Trace calls are matched to call sites by callee name (each program calls each external from one
site; a method site `x.m` matches `list.m`, `str.m`, ...). Calls that are no call site (the
runtime's operator intrinsics and lowering helpers, which the trace draws too) are skipped.
"""
import collections
import importlib
import itertools
import json
import subprocess
import sys
from pathlib import Path

import pytest

from subproc import poppy_env

core = pytest.importorskip("poppy_jit._core")

PROGRAMS = '''\
import asyncio
import time

from poppy_jit import poppy, readonly, sequential, unordered


async def _pause(ms):
    await asyncio.sleep(ms / 1000)


# 1. The issue's program: appends to a list the function created, then print(sum(...)).
@unordered
async def fetch(ms):
    await _pause(ms)
    return ms


@poppy
def append_sum_print(plan):
    out = []
    for ms in plan:
        out.append(fetch(ms))
    print("total", sum(out))
    return out


# 2. Readonly calls after a sequential one: they wait for it, not for each other.
@sequential
async def log_start(ms):
    await _pause(ms)


@readonly
async def look_a(ms):
    await _pause(ms)
    return 1


@readonly
async def look_b(ms):
    await _pause(ms)
    return 2


@poppy
def readonly_after_sequential(a, b, c):
    log_start(a)
    x = look_a(b)
    y = look_b(c)
    return x + y


# 3. Unordered requests in a loop between sequential calls (CityExcursions).
@sequential
async def show_city(ms):
    await _pause(ms)


@unordered
async def ask_ex(ms):
    await _pause(ms)
    return ms


@sequential
async def show_ex(ms):
    await _pause(ms)


@poppy
def excursions(plan):
    for ms in plan:
        show_city(10)
        e = ask_ex(ms)
        show_ex(e // 8)


# 4. Calls that depend on each other.
@unordered
async def step_a(ms):
    await _pause(ms)
    return ms


@unordered
async def step_b(ms):
    await _pause(ms)
    return ms


@unordered
async def step_c(ms):
    await _pause(ms)
    return ms


@unordered
async def combine(b, c):
    await _pause(20)
    return b + c


@poppy
def chain(a, c):
    x = step_a(a)
    y = step_b(x // 2)
    z = step_c(c)
    return combine(y, z)


# 5. A list the function created (appends ordered on the list only) and one it received
# (list.insert is sequential).
@unordered
async def grab(ms):
    await _pause(ms)
    return ms


@sequential
async def note(ms):
    await _pause(ms)


@poppy
def created_vs_received(plan, slow, sink):
    mine = []
    for ms in plan:
        r = grab(ms)
        note(slow)
        mine.append(r)
        sink.insert(0, r)
    return mine


# 6. if/else: each branch's call runs only once the condition is known; never both.
@unordered
async def decide(ms):
    await _pause(ms)
    return ms > 50


@unordered
async def yes_call(ms):
    await _pause(ms)


@unordered
async def no_call(ms):
    await _pause(ms)


@unordered
async def after_if(ms):
    await _pause(ms)


@poppy
def if_else(d, y, n, z):
    if decide(d):
        yes_call(y)
    else:
        no_call(n)
    after_if(z)


# 7. break: the next iteration runs only once this one's condition is known.
@unordered
async def probe(ms):
    await _pause(ms)
    return ms


@sequential
async def record(ms):
    await _pause(ms)


@poppy
def with_break(plan):
    for ms in plan:
        r = probe(ms)
        if r == 0:
            break
        record(r // 4)
    print("done")


# 8. while: iterations follow the condition.
@unordered
async def poll(n):
    await _pause(30)
    return n < 3


@unordered
async def side(n):
    await _pause(60)


@poppy
def while_loop():
    n = 0
    while poll(n):
        side(n)
        n = n + 1
    return n


# 9. An unordered call given a list it created: readonly (ordered after sequential calls).
@sequential
async def seq_first(ms):
    await _pause(ms)


@unordered
async def summarize(items):
    await _pause(40)
    return len(items)


@unordered
async def free_call(ms):
    await _pause(ms)


@poppy
def mutable_argument(a, b):
    items = [1, 2]
    seq_first(a)
    s = summarize(items)
    f = free_call(b)
    return s, f


# 10. Blocking externals and time.sleep timers run off the evaluator thread too.
@unordered(blocking=True)
def blocking_io(ms):
    time.sleep(ms / 1000)
    return ms


@sequential
def sync_tick(x):
    return x


@poppy
def blocking_and_timer(a, b):
    r = blocking_io(a)
    time.sleep(b / 1000)
    sync_tick(1)
    return r


# 11. continue, and a sequential call that waits for every earlier request in the loop.
@unordered
async def item_call(ms):
    await _pause(ms)
    return ms


@sequential
async def finish(ms):
    await _pause(ms)


@poppy
def with_continue(plan):
    total = 0
    for ms in plan:
        r = item_call(ms)
        if r < 20:
            continue
        total = total + r
    finish(10)
    return total


# 12. Nested loops with an early return.
@unordered
async def inner_call(ms):
    await _pause(ms)
    return ms


@poppy
def nested(plan):
    for row in plan:
        for ms in row:
            r = inner_call(ms)
            if r == 999:
                return r
    print("end")


# 13. Another @poppy function is inlined: its calls are not analysed here.
@unordered
async def helped(ms):
    await _pause(ms)
    return ms


@unordered
async def other(ms):
    await _pause(ms)
    return ms


@poppy
def helper_fetch(ms):
    return helped(ms)


@unordered
async def tail_call(ms):
    await _pause(ms)
    return ms


@poppy
def uses_helper(a, b):
    x = helper_fetch(a)
    y = other(b)
    return x, tail_call(y // 4)


# 14. An early return: what follows runs only once the condition is known.
@unordered
async def first_try(ms):
    await _pause(ms)
    return ms


@unordered
async def fallback_try(ms):
    await _pause(ms)
    return ms


@sequential
async def report_hit(x):
    await _pause(10)


@sequential
async def report_miss(x):
    await _pause(10)


@poppy
def early_return(a, b):
    r = first_try(a)
    if r > 50:
        report_hit(r)
        return r
    f = fallback_try(b)
    report_miss(f)
    return f


# 15. A declared immutable return type lets later calls be classified before it arrives.
@unordered
async def typed(ms) -> int:
    await _pause(ms)
    return ms


@unordered
async def uses_typed(x):
    await _pause(20)
    return x


@sequential
async def seq_after(ms):
    await _pause(ms)


@poppy
def hinted(a, b):
    t = typed(a)
    u = uses_typed(t)
    seq_after(b)
    return u


# 16. A dict the function builds, f-strings, a method of a str result.
@unordered
async def greet(text):
    await _pause(10 * len(text))
    return text


@poppy
def fstrings(names):
    d = {}
    for n in names:
        d[n] = greet(f"hi {n}")
    shout = d[names[0]].upper()
    print(f"{len(d)} greeted", shout)


PROGRAMS = {
    append_sum_print: [([40, 80, 120],)],
    readonly_after_sequential: [(30, 50, 50)],
    excursions: [([40, 80, 120],)],
    chain: [(50, 120), (20, 30)],
    created_vs_received: [([40, 80, 120], 10, []), ([30, 40, 50], 60, [])],
    if_else: [(60, 40, 40, 100), (30, 40, 40, 100)],
    with_break: [([40, 80, 0, 120],)],
    while_loop: [()],
    mutable_argument: [(40, 20), (20, 100)],
    blocking_and_timer: [(120, 40)],
    nested: [([[30, 60], [90, 20]],)],
    uses_helper: [(40, 80)],
    early_return: [(30, 80), (80, 30)],
    hinted: [(80, 20), (10, 80)],
    fstrings: [(["a", "bbbbbb", "ccccccccccc"],)],
    with_continue: [([40, 10, 60],)],
}

def call(fn, args):
    # The first argument (the plan a loop runs over) is a copy made for the call, which nothing
    # but the run's frame holds, as a literal argument is (so it is passed positionally, not in
    # a tuple): a list the caller also keeps (here, in `args`) could be changed by a call in the
    # body, so a loop over it would take its items one at a time, each after the earlier
    # sequential calls (docs/semantics.md, `for` loops).
    if not args or type(args[0]) is not list:
        return fn(*args)
    if len(args) == 1:
        return fn(list(args[0]))
    if len(args) == 2:
        return fn(list(args[0]), args[1])
    return fn(list(args[0]), args[1], args[2])


if __name__ == "__main__":
    for fn, runs in PROGRAMS.items():
        for args in runs:
            call(fn, args)
'''

# What the analysis claims for each program: (callee, callee, where). The trace test checks the
# claims; this table keeps them from silently shrinking.
EXPECTED = {
    "append_sum_print": {("fetch", "fetch", "itself"), ("fetch", "out.append", "across")},
    "readonly_after_sequential": {("look_a", "look_b", "same")},
    "excursions": {("ask_ex", "ask_ex", "itself"), ("ask_ex", "show_ex", "across"),
                   ("show_city", "ask_ex", "same")},
    "chain": {("step_a", "step_c", "same"), ("step_b", "step_c", "same")},
    # A sequential call waits for every earlier call to succeed (issue 14): `note` overlaps
    # `grab` and `mine.append` only across iterations, never the ones before it.
    "created_vs_received": {("grab", "grab", "itself"), ("grab", "mine.append", "across"),
                            ("grab", "note", "across"), ("grab", "sink.insert", "across"),
                            ("note", "mine.append", "across")},
    "if_else": {("decide", "after_if", "same"), ("no_call", "after_if", "same"),
                ("yes_call", "after_if", "same")},
    "with_break": {("probe", "record", "across")},
    "while_loop": {("poll", "side", "across"), ("side", "side", "itself")},
    "mutable_argument": {("seq_first", "free_call", "same"), ("summarize", "free_call", "same")},
    "blocking_and_timer": set(),  # the sleep and the tick wait for blocking_io to succeed
    "nested": set(),
    "uses_helper": set(),
    "early_return": set(),
    "hinted": set(),  # seq_after waits for uses_typed to succeed
    "fstrings": {("greet", "greet", "itself")},
    "with_continue": {("item_call", "item_call", "itself")},
}
NAMES = list(EXPECTED)


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(module of the programs, {function name: [list of call spans of one run]})."""
    d = tmp_path_factory.mktemp("overlap_traces")
    (d / "overlap_programs.py").write_text(PROGRAMS)
    trace = d / "trace.json"
    env = poppy_env(True)
    import poppy_jit
    pkg_parent = str(Path(poppy_jit.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = pkg_parent
    env["PYTHONPOPPY_TRACE"] = str(trace)
    p = subprocess.run([sys.executable, "overlap_programs.py"], cwd=d, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    run_name = {e["args"]["run"]: e["name"][len("run "):] for e in events
                if e.get("cat") == "run" and e["name"].startswith("run ")}
    runs = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "external":
            runs[e["args"]["run"]].append(e)
    by_function = collections.defaultdict(list)
    for run, calls in sorted(runs.items()):
        by_function[run_name[run]].append(calls)
    sys.path.insert(0, str(d))
    try:
        module = importlib.import_module("overlap_programs")
    finally:
        sys.path.remove(str(d))
    return module, by_function


def _trace_names(fn, analysis):
    """Site index -> a predicate on trace callee names."""
    import builtins
    out = {}
    for s in analysis["sites"]:
        callee = s["callee"]
        if "." in callee:
            method = callee.rsplit(".", 1)[1]
            out[s["index"]] = lambda n, m=method: n == m or n.endswith("." + m)
        else:
            obj = fn.__globals__.get(callee, getattr(builtins, callee, None))
            name = getattr(obj, "__qualname__", callee)
            out[s["index"]] = lambda n, name=name: n == name
    return out


def _overlapping(a, b):
    return a["ts"] < b["ts"] + b["dur"] and b["ts"] < a["ts"] + a["dur"]


@pytest.mark.parametrize("name", NAMES)
def test_analysis_agrees_with_the_trace(traced, name):
    module, by_function = traced
    fn = getattr(module, name)
    a = core.overlaps(fn)
    claimed = {(x, y) for x, y, _ in a["pairs"]}
    never = {(x, y): why for x, y, why in a["never"]}
    match = _trace_names(fn, a)
    runs = by_function[name]
    assert runs, f"{name} was not traced"
    seen, ran_together = set(), set()
    for calls in runs:
        sites = []
        for c in calls:
            hits = [i for i, m in match.items() if m(c["name"])]
            assert len(hits) <= 1, f"{c['name']} matches several sites {hits}"
            if hits:
                sites.append((hits[0], c))
        present = {s for s, _ in sites}
        ran_together |= {(x, y) for x in present for y in present if x <= y}
        for (s1, c1), (s2, c2) in itertools.combinations(sites, 2):
            if _overlapping(c1, c2):
                seen.add((min(s1, s2), max(s1, s2)))
    report = a["report"]
    # (a) every claim happened.
    missing = sorted((claimed & ran_together) - seen)
    assert not missing, f"claimed but never overlapped in the trace: {missing}\n{report}"
    # (b) nothing said to be impossible happened.
    wrong = sorted(p for p in seen if p in never)
    assert not wrong, f"overlapped in the trace but said never to: {[(p, never[p]) for p in wrong]}\n{report}"
    callee = {site["index"]: site["callee"] for site in a["sites"]}
    assert {(callee[x], callee[y], w) for x, y, w in a["pairs"]} == EXPECTED[name], report


def _pairs_by_callee(a, key):
    name = {s["index"]: s["callee"] for s in a["sites"]}
    return {(name[x], name[y]) for x, y, *_ in a[key]}


def test_the_issue_program(traced):
    """`out.append(fetch(x))` in a loop, then `print("total", sum(out))`: print runs after every
    fetch; a fetch overlaps other fetches and the appends of other iterations."""
    module, _ = traced
    a = core.overlaps(module.append_sum_print)
    claimed = _pairs_by_callee(a, "pairs")
    assert ("fetch", "print") not in claimed
    assert ("fetch", "print") in _pairs_by_callee(a, "never")
    assert claimed == {("fetch", "fetch"), ("fetch", "out.append")}
    assert {s["callee"]: s["class"] for s in a["sites"]}["out.append"] == "unordered"
    where = {(x, y): w for x, y, w in a["pairs"]}
    assert where[(1, 2)] == "across" and where[(1, 1)] == "itself"


def test_created_and_received_lists(traced):
    """Appending to a list the function created is ordered on that list only; inserting into a
    list it received is a sequential call."""
    module, _ = traced
    a = core.overlaps(module.created_vs_received)
    classes = {s["callee"]: s["class"] for s in a["sites"]}
    assert classes["mine.append"] == "unordered" and classes["sink.insert"] == "sequential"
    claimed = _pairs_by_callee(a, "pairs")
    assert ("note", "mine.append") in claimed and ("note", "sink.insert") not in claimed
