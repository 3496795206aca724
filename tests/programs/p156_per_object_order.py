# Per-object ordering: operations on a list/dict/set the run created itself are ordered against
# the other operations on that object only, until the object escapes (is given to any other call);
# after that they follow the global order again. Every case below would print something else if
# an operation moved across the call that had to come before it.
# difftest: min_in_flight=4
import asyncio

from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

SEEN = []
HELD = None


@sequential
async def mutate(xs):
    await asyncio.sleep(0.02)        # slow: what comes after it must wait for it to finish
    xs.append("from-mutate")


@sequential
def snapshot_held():
    SEEN.append(list(HELD))


@sequential
async def call_back(f, v):
    await asyncio.sleep(0.02)
    f(v)


@poppy
def escape_then_mutate():
    xs = []
    xs.append(llm("slow one"))       # pending argument: later operations wait for it
    n0 = len(xs)                     # a read after the write
    mutate(xs)                       # escape: after the append, before what follows
    xs.append("after")               # global order from here on: after mutate
    return n0, xs[-1], len(xs), xs[1]


@poppy
def escape_through_global():
    global HELD
    ys = []
    HELD = ys                        # stored in a global: escapes
    ys.append(llm("for the global"))
    snapshot_held()                  # must see the append
    return len(SEEN[-1])


@poppy
def escape_through_bound_method():
    zs = []
    add = zs.append
    call_back(add, "called back")    # the list escapes with its bound method
    zs.append(llm("later"))
    return [z[:6] for z in zs]


@poppy
def pick(xs, flag):
    return xs if flag == "ok" else []


@poppy
def escape_through_internal_value():
    xs = []
    xs.append(llm("first"))
    ys = pick(xs, llm("yesno: slow flag")[:0] + "ok")   # xs itself, known only when the flag is
    mutate(ys)                       # escape of xs through a value an internal function returned
    xs.append("after")               # must come after mutate's append
    return [x[:5] for x in xs]


@poppy
def escape_through_a_pending_branch_value():
    xs = []
    other = []
    xs.append("first")
    flag = llm("yesno: a flag")
    zs = xs if flag != "" else other  # call-free branches: a pending value no call makes
    mutate(zs)                       # escape of xs, known only when the flag is
    xs.append("after")               # must come after mutate's append
    return xs


@poppy
def reads_before_writes():
    d = {}
    d["a"] = llm("a value")
    first = d.get("a")
    d["a"] = "replaced"
    s = {1}
    s.add(2)
    had = 2 in s
    s.discard(2)
    return first[:5], d["a"], had, 2 in s


@poppy
def pop_of_empty_raises():
    ws = []
    ws.append(llm("only"))
    ws.pop()
    try_later = llm("never needed")
    ws.pop()                         # IndexError, exactly where CPython raises it
    log(f"not reached {try_later}")


@poppy
def items(topic):
    points = []
    for line in llm(f"list: {topic}", n=4).split("\n"):
        points.append(line.strip())
    expansions = []
    for p in points:
        expansions.append(llm(f"expand {topic} {p}"))
    return ", ".join(expansions)


@poppy
def skeletons(topics):
    out = []
    for t in topics:
        text = items(t)
        log(f"{t} {len(text)}")      # sequential: must not hold back the next topic's work
        out.append(len(text))
    return out


print(escape_then_mutate())
print(escape_through_global())
print(escape_through_bound_method())
print(escape_through_internal_value())
print(escape_through_a_pending_branch_value())
print(reads_before_writes())
try:
    pop_of_empty_raises()
except IndexError as e:
    print("IndexError", e)
print(skeletons(["rivers", "bridges", "forests"]))
