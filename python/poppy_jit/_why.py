"""Why did nothing overlap? The diagnosis of waits (`python -m poppy_jit run --why`, or
`poppy_jit._why.enable()` then `report()`).

For every external call of a run the runtime records (as for PYTHONPOPPY_TRACE) when it was
reached, when its arguments were known, when it started and finished, its class, its source line
and whether per-object ordering held it. From those, each call that could not start at once is
given the cause of its wait:

- `argument`: it waited for an argument, the result of an earlier call (which one);
- `order`: it waited for the order of earlier calls — the call that finished just before it
  started, with both classes (a sequential call waits for every earlier call, a readonly one for
  earlier sequential ones, per PopPy §6.2), or an earlier call whose class was not known yet;
- `object`: it was ordered against an object the run created (a list/dict/set it touches);
- `thread cap`: every thread of the blocking pool was busy;
- `fallback`: the call is of a compiled function that fell back (it runs as one sequential call).

Causes are summed per call site (callee and line) over the run. A run in which at most one call
ran at a time although several could have (unordered or readonly calls whose only wait was
another call finishing) says so. Nothing here changes how a program runs; recording costs what a
trace costs.

This module owns the analysis and its report; the records come from `host::trace`.
"""
from __future__ import annotations

import linecache
import os
import re
import sys
from collections import defaultdict

active = False
_runs: list = []  # (qualname, func, [record, ...])
# The launched script, whose top-level code runs as plain CPython (see `note_main`).
_main_script: str | None = None
# A wait shorter than this is not a wait (scheduling noise), in seconds.
_MIN_WAIT = 0.002


def enable() -> None:
    """Record what the diagnosis needs (the runtime's call records) from now on."""
    global active
    from . import _corelink, _trace
    active = True
    _corelink.stats_sections["waits"] = lambda: summary()["sites"]
    if not _trace.enabled:
        _trace.start(None)


def note_run(qualname: str, func, records: list) -> None:
    """Called by the runtime after each run while `active` (host::trace)."""
    calls = []
    for (position, callee, cls, times, ok, line, object_ordered) in records:
        t_queued, t_ready, t_dispatch, t_done = times
        calls.append({"position": position, "callee": callee, "class": cls,
                      "t_queued": t_queued, "t_ready": t_ready, "t_dispatch": t_dispatch,
                      "t_done": t_done, "ok": ok, "line": line, "object": object_ordered})
    _runs.append((qualname, func, calls))


def clear() -> None:
    _runs.clear()


def note_main(path: str) -> None:
    """Called by the launcher with the script it runs: its module-level code (including the
    `if __name__ == "__main__":` block) is not compiled — the lifter translates functions only
    (module code reads and writes its variables by name) — so the report says so: the calls it
    makes directly run one after another, whatever their classes."""
    global _main_script
    _main_script = path


def _main_lines(script: str) -> list:
    """What became of the launched script's module code (`_mainblock`)."""
    from . import _mainblock

    base = os.path.basename(script)
    notes = [n for n in _mainblock.notes if n[0] == script]
    failed = [b.failed for b in _mainblock._blocks.values()
              if b.filename == script and getattr(b, "failed", None)]
    rest = ("the rest of its module code runs as plain CPython (the calls it makes itself run one "
            "after another; the functions it calls are compiled as configured)")
    if failed:
        return [f"main block of {base}: {failed[0]}; {rest}"]
    if not notes:
        return [f"top-level code of {base} is not compiled (module code without an `if __name__ "
                f"== \"__main__\":` block): {rest}"]
    _, first, last, resume, reason = notes[-1]
    if first is None:
        return [f"main block of {base} is not compiled: {reason}; {rest}"]
    fell_back = _fallbacks().get("<module>")
    if fell_back:
        return [f"main block of {base}: lines {first}–{last} were handed to the compiler but fell "
                f"back ({fell_back}): they ran as plain CPython; {rest}"]
    line = f"main block of {base}: lines {first}–{last} compiled"
    if resume is not None:
        line += f" (from line {resume} it runs as module code: {reason})"
    return [line + f"; {rest}"]


def _name(f) -> str:
    q = getattr(f, "__qualname__", None) or getattr(type(f), "__qualname__", "?")
    if getattr(f, "__module__", "") == "poppy_jit._intrinsics" and q in _SHOWN_INTRINSICS:
        return _SHOWN_INTRINSICS[q]
    return q


def _is_intrinsic(f) -> bool:
    """A helper of the runtime, not a call the program wrote — except the statements `x in c`,
    `c[k] = v` and `del c[k]`, which are calls the program orders (a cache's look-up and store)."""
    return getattr(f, "__module__", "") in ("poppy_jit._intrinsics", "poppy_jit._rt") \
        and getattr(f, "__name__", "") not in _SHOWN_INTRINSICS


# The runtime's helpers that stand for an operation written in the program, with its name.
_SHOWN_INTRINSICS = {"_contains": "in", "_not_contains": "not in", "_setitem": "setitem",
                     "_delitem": "delitem"}


def _blocking(f) -> bool:
    for g in (f, getattr(f, "__func__", None), getattr(f, "func", None),
              getattr(type(f), "__call__", None)):
        spec = getattr(g, "__poppy_external__", None)
        if spec is not None:
            return bool(spec.blocking)
    return False


def _fallbacks() -> dict:
    try:
        from . import _corelink
        if _corelink.core is None:
            return {}
        return {fb["function"]: fb["reason"] for fb in _corelink.core.stats()["fallbacks"]}
    except Exception:  # the diagnosis never breaks a program
        return {}


def _cap() -> int:
    try:
        from . import _corelink
        return int(_corelink.core.blocking_pool_info()["max_workers"])
    except Exception:
        return 32


def diagnose(calls: list, fallbacks: dict | None = None, cap: int | None = None) -> list:
    """Each call with a `wait` (seconds) and `cause` (kind, text) added, in program order."""
    fallbacks = _fallbacks() if fallbacks is None else fallbacks
    cap = _cap() if cap is None else cap
    done = sorted((c for c in calls if c["t_done"] is not None), key=lambda c: c["t_done"])
    order = sorted(calls, key=lambda c: (c["position"] is None, c["position"] or 0))

    def finished_near(t, before_pos):
        """The earlier call that finished last at or just before `t`."""
        best = None
        for c in done:
            if c["t_done"] > t + _MIN_WAIT:
                break
            if before_pos is not None and c["position"] is not None and c["position"] >= before_pos:
                continue
            best = c
        if best is not None and t - best["t_done"] <= _MIN_WAIT * 2:
            return best
        return None

    for c in order:
        c["wait"], c["cause"] = 0.0, None
        name = _name(c["callee"])
        if name in fallbacks:
            c["cause"] = ("fallback", f"{name} fell back ({fallbacks[name]}): it runs as one "
                                      "sequential call")
        ready = c["t_ready"] if c["t_ready"] is not None else c["t_queued"]
        start = c["t_dispatch"] if c["t_dispatch"] is not None else ready
        args_wait = ready - c["t_queued"]
        order_wait = start - ready
        # A wait counts when it is long against the call itself (scheduling noise is not a cause).
        own = (c["t_done"] - start) if c["t_done"] is not None else 0.0
        floor = max(_MIN_WAIT, 0.25 * own)
        if args_wait >= floor and args_wait >= order_wait:
            c["wait"] = args_wait
            src = finished_near(c["t_ready"], c["position"])
            what = f"the result of #{src['position']} {_name(src['callee'])} (line {src['line']})" \
                if src else "an argument computed by earlier calls"
            c["cause"] = c["cause"] or ("argument", f"waited for an argument: {what}")
        elif order_wait >= floor:
            c["wait"] = order_wait
            if c["object"]:
                c["cause"] = c["cause"] or (
                    "object", "ordered against an object the run created (a list/dict/set it "
                              "reads or writes): waited for earlier calls on it")
                continue
            if _blocking(c["callee"]):
                busy = sum(1 for o in calls if o is not c and o["t_dispatch"] is not None
                           and _blocking(o["callee"]) and o["t_dispatch"] <= c["t_ready"]
                           and (o["t_done"] is None or o["t_done"] > c["t_ready"]))
                if busy >= cap:
                    c["cause"] = c["cause"] or ("thread cap", f"all {cap} threads of the blocking "
                                                "pool were busy ([poppy] blocking_threads)")
                    continue
            src = finished_near(c["t_dispatch"], c["position"])
            if src is not None:
                held = {"sequential": ("readonly", "sequential"), "readonly": ("sequential",)}
                if src["class"] in held.get(c["class"], ()):
                    rule = {"sequential": "a sequential call waits for earlier readonly and "
                                          "sequential calls",
                            "readonly": "a readonly call waits for earlier sequential calls"}[
                        c["class"]]
                else:
                    rule = (f"a {c['class']} call does not wait for a {src['class']} one by "
                            "their classes: the order was passed on late (a class or callee "
                            "known late, an inlined call, an object it involves)")
                c["cause"] = c["cause"] or (
                    "order", f"{c['class']}, waited for #{src['position']} "
                             f"{_name(src['callee'])} ({src['class']}, line {src['line']}) to "
                             f"finish: {rule}")
            else:
                c["cause"] = c["cause"] or ("order", "waited for the order of earlier calls")
    return order


def _peak(calls: list) -> int:
    events = []
    for c in calls:
        if c["t_dispatch"] is not None and c["t_done"] is not None:
            events += [(c["t_dispatch"], 1), (c["t_done"], -1)]
    live = peak = 0
    for _, d in sorted(events, key=lambda e: (e[0], e[1])):
        live += d
        peak = max(peak, live)
    return peak


def _gated(func) -> list:
    from . import _warnings

    try:
        return _warnings.gated_statements(func)
    except Exception:  # no analysis for this function
        return []


def summary() -> dict:
    """Per call site (callee, line): calls, calls that waited, seconds waited, causes (kind →
    count); and per run whether calls could have overlapped but did not."""
    fallbacks, cap = _fallbacks(), _cap()
    sites: dict = {}
    runs = []
    for qualname, func, calls in _runs:
        calls = [c for c in calls if not _is_intrinsic(c["callee"])]
        diagnosed = diagnose(calls, fallbacks, cap)
        files = _candidate_files(func)
        for c in diagnosed:
            key = (_name(c["callee"]), c["line"])
            s = sites.setdefault(key, {"callee": key[0], "line": key[1], "calls": 0, "waited": 0,
                                       "wait_s": 0.0, "causes": defaultdict(int), "why": {},
                                       "run_s": 0.0, "inline": _inline(c["callee"]),
                                       "func": c["callee"], "class": c["class"],
                                       "file": _file_of(files, c["line"], key[0],
                                                        _unwrap(c["callee"]))})
            s["calls"] += 1
            if c["t_dispatch"] is not None and c["t_done"] is not None:
                s["run_s"] += c["t_done"] - c["t_dispatch"]
            if c["cause"] is not None and c["wait"] > 0:
                s["waited"] += 1
                s["wait_s"] += c["wait"]
                if c["cause"][0] != "argument":
                    s["serialising_s"] = s.get("serialising_s", 0.0) + c["wait"]
                s["causes"][c["cause"][0]] += 1
                text = re.sub(r"#\d+ ", "", c["cause"][1])  # grouped over the calls of the site
                s["why"].setdefault(text, 0)
                s["why"][text] += 1
        movable = [c for c in diagnosed if c["class"] in ("unordered", "readonly")]
        serialised = [c for c in movable if c["cause"] is not None and c["cause"][0] == "order"
                      and c["wait"] > 0]
        peak = _peak(diagnosed)
        runs.append({"function": qualname, "calls": len(diagnosed), "peak": peak,
                     "could_overlap": len(movable) >= 2 and peak <= 1
                     and bool(serialised), "file": getattr(getattr(func, "__code__", None),
                                                           "co_filename", None),
                     # Loops in try/with bodies, whose iterations are gated (no wait shows it:
                     # what follows a statement there is not even reached before it finished).
                     "gated": _gated(func) if len(movable) >= 2 and peak <= 1 else []})
    for s in sites.values():
        s["causes"] = dict(s["causes"])
        s.setdefault("serialising_s", 0.0)
        f = s.pop("func")
        s["target"], s["annotated"], s["own"] = _describe(f) if s["inline"] else (None, None, None)
    ranked = sorted(sites.values(), key=lambda s: (-s["serialising_s"], -s["wait_s"]))
    return {"sites": ranked, "runs": runs}


def report(top: int = 8) -> str:
    """The text `run --why` prints: the call sites that waited longest, with their causes and
    source lines, and runs whose calls could have overlapped but did not."""
    s = summary()
    lines = ["poppy_jit: why calls did not overlap", "-" * 36]
    fell_back = _fallbacks()
    if fell_back:
        lines.append("functions that fell back run as plain CPython (their calls one after "
                     "another, and each is one sequential call of its caller):")
        lines += [f"    {name}: {reason}" for name, reason in fell_back.items()]
    if _main_script:
        lines += _main_lines(_main_script)
    if not s["runs"]:
        lines.append("no compiled run made external calls (nothing was compiled, or every "
                     "function fell back: see stats()['fallbacks'])")
        return "\n".join(lines + _remote_lines())
    files = [r["file"] for r in s["runs"] if r["file"]]
    said = set()
    for r in s["runs"]:
        if r["could_overlap"]:
            lines.append(f"{r['function']}: calls could have overlapped but did not (at most "
                         f"{r['peak']} at a time of {r['calls']}); causes below")
        if r["gated"] and (r["function"], tuple(r["gated"])) not in said:
            said.add((r["function"], tuple(r["gated"])))
            where = ", ".join(str(line) for line in r["gated"])
            lines.append(f"{r['function']}: at most {r['peak']} call at a time: "
                         f"the loop in the body of the try or with statement at line(s) {where} "
                         "runs its iterations one after another (in such a body each statement "
                         "starts once the one before it finished without raising; that is a "
                         "while loop or a for loop that may break or return — a for loop that may "
                         "only raise runs its iterations speculatively, and a try or with inside "
                         "the loop's body keeps them overlapping)")
    inline = _inline_lines(s["sites"])
    lines += inline
    waited = [x for x in s["sites"] if x["waited"]]
    if not waited and not inline:
        lines.append("no call waited to start (calls started as soon as they were reached)")
    serialising = [x for x in waited if x["serialising_s"] > 0]
    data = [x for x in waited if x["serialising_s"] == 0]
    if serialising and inline:
        lines.append("(the waits below include time the runtime's thread spent in those calls)")
    if serialising:
        lines.append("serialising causes (calls held back by the order of other calls, an "
                     "object, the thread cap or a fallback), longest first:")
    for x in serialising[:top]:
        lines.append(f"{x['callee']} ({_where(x)}): {x['waited']} of {x['calls']} calls "
                     f"waited {x['serialising_s'] * 1000:.0f} ms in all")
        src = _source([x["file"]] if x.get("file") else files, x["line"], x["callee"])
        if src:
            lines.append(f"    {src}")
        whys = [(w, n) for w, n in x["why"].items() if not w.startswith("waited for an argument")]
        for why, n in sorted(whys, key=lambda kv: -kv[1])[:3]:
            lines.append(f"    {n}× {why}")
    if data:
        total = sum(x["wait_s"] for x in data)
        worst = ", ".join(f"{x['callee']} ({_where(x)})" for x in data[:3])
        lines.append(f"{sum(x['waited'] for x in data)} calls at {len(data)} sites waited only "
                     f"for their arguments ({total * 1000:.0f} ms; data dependences, e.g. {worst})")
    return "\n".join(lines + _remote_lines())


def _spec(f):
    """The annotation of an external (`ExternalSpec`), looked for on `f` and what it wraps."""
    for g in (f, getattr(f, "__func__", None), getattr(f, "func", None),
              getattr(type(f), "__call__", None)):
        spec = getattr(g, "__poppy_external__", None)
        if spec is not None:
            return spec
    return None


def _inline(f) -> bool:
    """Whether calls of `f` run on the runtime's own thread (synchronous, not `blocking=True`,
    not async, not on an executor): while one runs, nothing else starts."""
    spec = _spec(f)
    return spec is None or not (spec.blocking or spec.is_async)


def _unwrap(f):
    """The function a call of `f` ends in: through functools.partial and bound methods."""
    import functools

    for _ in range(16):
        if isinstance(f, functools.partial):
            f = f.func
        elif hasattr(f, "__func__") and not isinstance(f, type):
            f = f.__func__
        else:
            break
    return f


def _describe(f):
    """(`module:qualname` of what a call of `f` runs or None, whether it is annotated, whether
    it is the program's own function (an internal module's))."""
    import functools

    target = _unwrap(f)
    mod = getattr(target, "__module__", None)
    qual = getattr(target, "__qualname__", None)
    name = f"{mod}:{qual}" if isinstance(mod, str) and isinstance(qual, str) else None
    annotated = _spec(f) is not None or _spec(target) is not None
    own = False
    try:
        from . import _config
        own = callable(target) and _config.is_internal(target)
    except Exception:  # the diagnosis never breaks a program
        pass
    via = "functools.partial" if isinstance(f, functools.partial) else None
    return (name, via), annotated, own


def _candidate_files(func) -> list:
    """Files compiled code of a run may come from: the run's function's, the launched script's
    and the program's internal modules' (inlined callees)."""
    files = []
    code = getattr(func, "__code__", None)
    if code is not None:
        files.append(code.co_filename)
    if _main_script:
        files.append(_main_script)
    try:
        from . import _config
        for name, m in list(sys.modules.items()):
            f = getattr(m, "__file__", None)
            if f and name != "__main__" and _config.is_internal_module(name):
                files.append(f)
    except Exception:  # the diagnosis never breaks a program
        pass
    return list(dict.fromkeys(files))


def _file_of(files: list, line: int, callee: str, target=None):
    """The first of `files` whose line `line` mentions the callee or the function it wraps (None
    if none does)."""
    shorts = {callee.split(".")[-1], str(getattr(target, "__name__", "")) or callee}
    for f in files:
        text = linecache.getline(f, line).strip()
        if text and any(short in text for short in shorts):
            return f
    return files[0] if len(files) == 1 else None


def _where(x) -> str:
    f = x.get("file")
    return f"{os.path.basename(f)}, line {x['line']}" if f else f"line {x['line']}"


# A call on the runtime's thread this long (in all, per site) is reported as holding the run up.
_SLOW_INLINE = 0.05


def _inline_lines(sites: list) -> list:
    """The call sites whose calls ran one at a time on the runtime's own thread, long enough to
    matter: the usual cause of a run with nothing in parallel (an unannotated model call)."""
    slow = [x for x in sites if x["inline"] and x["run_s"] >= _SLOW_INLINE
            and x["run_s"] >= 0.005 * x["calls"]]
    if not slow:
        return []
    out = ["slow calls ran one at a time on the runtime's own thread (synchronous and neither "
           "blocking=True nor async: while one runs, no other call starts or finishes):"]
    for x in sorted(slow, key=lambda x: -x["run_s"])[:4]:
        (name, via), annotated, own = x["target"], x["annotated"], x["own"]
        shown = f"{name.split(':')[-1]} ({name} through {via})" if via and name else x["callee"]
        out.append(f"    {shown} ({_where(x)}): {x['calls']} calls, {x['run_s'] * 1000:.0f} ms "
                   f"in all, {x['class']}")
        src = linecache.getline(x["file"], x["line"]).strip() if x.get("file") else ""
        if src:
            out.append(f"        {src}")
        fell_back = _fallbacks().get(name.split(":")[-1]) if name else None
        if annotated:
            out.append("        annotated without blocking=True: a call that waits (network, "
                       "sleep) needs blocking=True (or async def) to run beside others")
        elif own and fell_back:
            out.append(f"        {name} is the program's own function and fell back "
                       f"({fell_back}): it ran as one sequential call, its own calls one at a "
                       "time (and @poppy functions it reaches run plainly: nested runs)")
        elif name:
            if own and via:
                out.append(f"        {name} is the program's own function, called through "
                           f"{via}: such a call is not compiled into the run, it runs as one "
                           "sequential call")
            out.append(f"        {name} is not annotated, so it is sequential; if it is a model or "
                       f"tool call whose effects need no order, annotate it ([externals] "
                       f"\"{name}\" = {{ kind = \"unordered\", blocking = true }})")
    return out


def _remote_lines() -> list:
    """Calls run by an executor engine (`executor="process"|"ray"`), per engine and callee: what
    the hand-over cost before the worker started (the engine's queue and the transfer), the
    pickling, the work itself and the reply."""
    from . import _trace

    groups = defaultdict(list)
    for c in _trace.remote_calls():
        groups[(c["engine"], c["callee"])].append(c)
    if not groups:
        return []
    out = ["calls run by executors (ms per call, median: queue and transfer / pickling / run / "
           "reply):"]
    for (engine, callee), cs in groups.items():
        queue = _median([c["t_start"] - c["t_submit"] for c in cs]) * 1000
        run = _median([c["t_end"] - c["t_start"] for c in cs]) * 1000
        reply = _median([c["t_recv"] - c["t_end"] for c in cs]) * 1000
        pickle = _median([c["pickle_ms"] for c in cs])
        failed = sum(not c["ok"] for c in cs)
        out.append(f"    {callee} on {engine}: {len(cs)} calls"
                   + (f" ({failed} failed)" if failed else "")
                   + f", {queue:.1f} / {pickle:.1f} / {run:.1f} / {reply:.1f}")
    return out


def _source(files: list, line: int, callee: str) -> str:
    short = callee.split(".")[-1]
    for f in dict.fromkeys(files):
        text = linecache.getline(f, line).strip()
        if text and short in text:
            return text
    return ""


def report_at_exit() -> None:
    """`run --why`: record from now on, print the report to stderr at exit."""
    import atexit
    enable()
    atexit.register(lambda: print(report(), file=sys.stderr))


def _median(xs: list) -> float:
    """The upper median (a value that occurred)."""
    return sorted(xs)[len(xs) // 2]
