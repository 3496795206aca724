# All reordering classes mixed in irregular control flow: reads and writes of the shared store,
# logs and unannotated notes, LLM calls and lookups, inside nested loops with break, continue and
# early return, an inlined callee that writes, and a while loop whose condition reads the store.
# The sequential order and the read/write segments must be exactly CPython's. (No parallelism is
# expected: whether each loop goes on depends on a read ordered after a log that depends on the
# previous LLM reply, so every call waits for the one before.)
from poppy_jit import poppy
from _ext import llm, log, lookup, note, read, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def bump(key):
    value = read(key)
    write(key, (value or 0) + 1 if not isinstance(value, str) else value + "!")
    return read(key)


@poppy
def mixed(rounds, items):
    trail = []
    for r in range(rounds):
        note(f"round {r}")
        for it in items:
            verdict = llm(f"yesno: {it} in round {r}")
            if verdict == "yes" and it.startswith("s"):
                log(f"skip {it}")
                continue
            where = lookup(f"{it}/{r}")
            if it == "stop" and r > 0:
                write("stopped", r)
                break
            trail.append((r, it, verdict, where[-3:-1]))
            if read("limit") and len(trail) > 6:
                log("limit reached")
                return trail, bump("count")
        bump("count")
    return trail, read("count")


@poppy
def drain(limit):
    steps = []
    write("queue", 3)
    while read("queue") > 0 and len(steps) < limit:
        n = read("queue")
        steps.append(llm(f"count: drain {n}"))
        write("queue", n - 1)
        note(f"drained {n}")
    return steps, read("queue")


@poppy
def early(items):
    for i, it in enumerate(items):
        log(f"check {it}")
        for j in range(2):
            if llm(f"yesno: {it} {j}") == "yes":
                write(f"hit/{it}", j)
                return i, j, read(f"hit/{it}")
            note(f"miss {it} {j}")
    return None


print(bump("greeting"), bump("fresh"))
print(mixed(2, ["a", "s1", "b", "stop", "c"]))
print(mixed(1, ["x", "y"]))
print(drain(5))
print(early(["p", "q", "r"]))
