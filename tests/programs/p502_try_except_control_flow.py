# try/except inside loops with break, continue and return in the body and in the handler, a
# try in a while loop, nested loops, and a body whose later calls CPython never makes once an
# earlier statement raised (no speculative unordered call after the raising point may show in a
# run that does not raise: the trace must be CPython's exactly). They compile
# (docs/design-exceptions.md, stage 1).
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def first_good(prompts):
    for i, p in enumerate(prompts):
        try:
            r = llm(p)
            if r.startswith("yes"):
                return i, r
        except ValueError:
            log(f"{i} refused")
            continue
        log(f"{i} not yes")
    return None


@poppy
def stop_at_failure(prompts):
    seen = []
    for p in prompts:
        try:
            seen.append(llm(p))
        except ValueError as e:
            log(f"stop: {e}")
            break
    else:
        log("no failure")
    return seen


@poppy
def body_stops_at_raise(k):
    got = []
    try:
        got.append(llm(f"one {k}"))
        got.append(llm(f"fail: two {k}") if k else llm(f"two {k}"))
        got.append(llm(f"three {k}"))
        got.append(llm(f"four {k}"))
        log(f"body done {k}")
    except ValueError:
        log(f"after {len(got)} calls")
    return got


@poppy
def retry_while(q, budget):
    attempt = 0
    while True:
        attempt += 1
        try:
            prompt = f"fail: {q} {attempt}" if attempt < budget else f"{q} {attempt}"
            return attempt, llm(prompt)
        except ValueError as e:
            log(f"attempt {attempt}: {e}")
            if attempt > 5:
                return attempt, None


@poppy
def nested_loops(rows):
    out = []
    for r in rows:
        for c in r:
            try:
                out.append(llm(c))
            except ValueError:
                out.append("-")
                if c.endswith("!"):
                    break
        log(f"row {r}")
    return out


print(first_good(["fail: a", "yesno: b", "yesno: c", "yesno: d"]))
print(stop_at_failure(["a", "b", "fail: c", "d"]))
print(stop_at_failure(["a", "b"]))
print(body_stops_at_raise(0))
print(body_stops_at_raise(1))
print(retry_while("q", 3))
print(nested_loops([["a", "fail: b", "c"], ["fail: d!", "e"], ["f"]]))
