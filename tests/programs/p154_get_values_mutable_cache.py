# get_values with a mutable cache (`if state in cache` on a set, `cache.add(state)`,
# `values.append(value)`): the second session's known gap (one LLM call at a time: the membership
# test waited for the previous iteration's `values.append(value)`, which waits for that reply).
# With per-object ordering the set and the list are the run's own and never escape, so each
# operation waits only for earlier operations on the same object — and for earlier calls whose
# arguments are pending only when those could be that object (an external's result cannot be,
# unless the object reached that call).
# difftest: min_in_flight=4
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.1)


@poppy
def llm_get_value(task, state):
    return int(llm(f"count: value of {state} for {task}"))


@poppy
def get_values_set(task, states):
    cache = set()
    values = []
    for state in states:
        if state in cache:
            values.append(0)
        else:
            value = llm_get_value(task, state)
            cache.add(state)
            values.append(value)
    return values


print(get_values_set("fix the bug", ("a", "b", "c", "d", "a", "e", "f", "g", "h")))
