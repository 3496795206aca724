# A global rebound by a @sequential external the @poppy function calls: every read after the
# call sees the new value (the module scan finds `global COUNT` in bump, so reads of COUNT are
# made in program order, as readonly reads); the llm calls still overlap.
# difftest: min_in_flight=2
from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)
COUNT = 0


@sequential
def bump():
    global COUNT
    COUNT += 1


@poppy
def run():
    out = []
    for _ in range(3):
        bump()
        out.append(COUNT)
    return out


@poppy
def mixed(topics):
    answers = [llm(f"about {t}") for t in topics]
    bump()
    log(f"count {COUNT}")
    return COUNT, answers


print(run())
print(run())
print(mixed(["a", "b", "c"]))
