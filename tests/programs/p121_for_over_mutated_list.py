# A `for` loop over a list that the loop body mutates (the worklist pattern: append sub-tasks to
# the list being iterated, directly, through a helper or through enumerate(); or remove a later
# element). CPython's list iterator sees the mutation. These functions compile: the loop pulls
# one item at a time in program order, after the body's earlier changes to the list. They once ran
# compiled over a snapshot and silently skipped the appended tasks, then fell back ("the loop
# over `queue` may change it in its body").
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.1)


def enqueue(q, x):
    q.append(x)


@poppy
def worklist(seed):
    queue = [seed]
    done = []
    for task in queue:
        reply = llm(f"yesno: split {task}")
        if reply == "yes" and len(queue) < 6:
            queue.append(task + "a")
            queue.append(task + "b")
        done.append(task)
    return done


@poppy
def helper_appends_during_loop(seed):
    queue = [seed]
    seen = []
    for t in queue:
        seen.append(llm(f"visit {t}")[:5])
        if len(queue) < 4:
            enqueue(queue, t + "+")
    return seen


@poppy
def remove_during_loop(items):
    items = list(items)
    out = []
    for x in items:
        out.append(llm(f"take {x}")[:5])
        if x == "b":
            items.remove("c")
    return out


@poppy
def enumerate_growing(seed):
    lst = [seed]
    out = []
    for i, x in enumerate(lst):
        out.append((i, llm(f"count: {x}")))
        if len(lst) < 3:
            lst.append(x + "+")
    return out


print(worklist("t"))
print(helper_appends_during_loop("s"))
print(remove_during_loop(["a", "b", "c", "d"]))
print(enumerate_growing("e"))
