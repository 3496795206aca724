# KNOWN GAP (xfail; parallelism, not correctness): the PopPy paper's get_values (Fig. 1, verbatim:
# `value_cache |= {state}`) gets no parallelism across loop iterations. The set display `{state}`
# is a mutable container, so `frozenset |= set` is classified readonly; a readonly call waits for
# the previous iteration's `print` (sequential), which waits for that iteration's LLM reply — and
# the next `state in value_cache` needs the updated cache, so every llm_get_value waits for the
# previous one: at most 1 call in flight for 8 distinct states (paper Fig. 2 runs them in
# parallel). Written `value_cache | frozenset((state,))` (benches/apps/tot.py) all 8 overlap.
# The same with a mutable cache (get_values_set: `if state in cache` on a set, `cache.add`,
# `values.append(value)`), even without prints: the membership test is readonly and waits for the
# previous iteration's `values.append(value)` (sequential), which waits for that LLM reply — one
# call at a time again. The output and trace are correct; only the min_in_flight requirement fails.
# difftest: min_in_flight=4
# difftest: xfail=1
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.1)


@poppy
def llm_get_value(task, state):
    return int(llm(f"count: value of {state} for {task}"))


@poppy
def get_values(task, states):
    value_cache = frozenset()
    values = tuple()
    for idx, state in enumerate(states):
        if state in value_cache:
            value = 0
            print(f"{idx}: duplicate")
        else:
            value = llm_get_value(task, state)
            value_cache |= {state}
            print(f"{idx}: {value}")
        values += (value,)
    return values


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


print(get_values("fix the bug", ("a", "b", "c", "d", "a", "e", "f", "g", "h")))
print(get_values_set("fix the bug", ("a", "b", "c", "d", "a", "e", "f", "g", "h")))
