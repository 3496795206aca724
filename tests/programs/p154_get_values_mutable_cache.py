# KNOWN GAP (xfail; parallelism, not correctness): get_values with a mutable cache (`if state in
# cache` on a set, `cache.add(state)`, `values.append(value)`), even without prints: the membership
# test is a readonly call and waits for the previous iteration's `values.append(value)`
# (sequential on another list), which waits for that LLM reply — one call at a time. Needs
# per-object ordering (an append to one list should not order reads of another set). The output
# and trace are correct; only the min_in_flight requirement fails.
# difftest: min_in_flight=4
# difftest: xfail=1
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
