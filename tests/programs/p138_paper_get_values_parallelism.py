# The PopPy paper's get_values (Fig. 1), verbatim: `value_cache |= {state}`. The set display
# `{state}` is built for that one operation, so nothing else can see it and it does not order the
# update as a read of a mutable object (passes::fresh_operands): the 8 distinct states' LLM calls
# overlap, as in the paper's Fig. 2. (Before, `frozenset |= set` was a readonly call behind the
# previous iteration's print, which waited for that iteration's reply: one call at a time.)
# difftest: min_in_flight=4
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


print(get_values("fix the bug", ("a", "b", "c", "d", "a", "e", "f", "g", "h")))
