# Per-object ordering across an `if` (or a loop) whose condition is not known yet: the walk from
# an operation on an owned list back to the list's creation may look past such an undecided
# branch only when neither of its sides can reach the list (from the variables it starts from).
# Each function below has an undecided branch that DOES reach the list — directly, through a
# value another undecided branch computes, through a loop variable, or through an internal
# region's outputs — and a later read that must see the branch's effect; each prints something
# else if the read moved past the branch.
import asyncio

from poppy_jit import poppy, sequential
from _ext import llm, set_latency_scale

set_latency_scale(0.1)


@sequential
async def mutate(xs):
    await asyncio.sleep(0.02)        # slow: a read that does not wait for it sees the old list
    xs.append("from-mutate")


@poppy
def branch_mutates_directly():
    xs = ["a"]
    flag = llm("yesno: slow flag")   # pending: the if below is undecided for a while
    if flag != "":
        mutate(xs)
    return len(xs), xs[-1]


@poppy
def branch_mutates_a_branch_value():
    xs = ["a"]
    other = []
    flag = llm("yesno: first flag")
    zs = xs if flag != "" else other  # a pending value an undecided branch computes
    flag2 = llm("yesno: second flag")
    if flag2 != "":
        mutate(zs)                   # reaches xs only through zs
    return len(xs), len(other)


@poppy
def branch_mutates_a_loop_value():
    xs = ["a"]
    cur = []
    for q in ["p", "q"]:
        if llm(f"yesno: {q}") != "":
            cur = xs                 # a loop-carried value an undecided branch sets
    if llm("yesno: last") != "":
        mutate(cur)
    return len(xs), xs[0], xs[-1]


@poppy
def branch_mutates_inside_a_loop_over_pending_items():
    xs = ["a"]
    for word in llm("list: three words", n=3).split("\n"):   # items known only later
        if word != "":
            mutate(xs)
    return len(xs)


@poppy
def branch_after_a_region():
    text = llm("list: some words", n=4)
    words = []
    for w in text.split("\n"):       # a loop of internal work: may run as one region
        words.append(w.strip().upper())
    if len(words) > 0:               # undecided until the answer arrives
        mutate(words)
    return len(words), words[-1]


for f in (branch_mutates_directly, branch_mutates_a_branch_value, branch_mutates_a_loop_value,
          branch_mutates_inside_a_loop_over_pending_items, branch_after_a_region):
    print(f.__name__, f())
