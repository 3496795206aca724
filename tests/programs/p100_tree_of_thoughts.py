# Tree-of-Thoughts (PopPy Fig. 1) and variants: beam search where an LLM proposes successor
# states and scores them; get_values with a cache of scored states (duplicates print a line and
# cost no request), best-first search, and a beam whose width comes from a keyword argument.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)
NUM_STEPS = 2
BEAM_WIDTH = 2


def topk(states, values, k):
    """Unannotated helper (runs as one sequential call): the k best states, stable on ties."""
    ranked = sorted(range(len(states)), key=lambda i: -values[i])
    return tuple(states[i] for i in ranked[:k])


@poppy
def llm_get_proposals(task, state):
    reply = llm(f"list: next steps for {task} after {state!r}", n=3)
    out = ()
    for line in reply.split("\n"):
        out += (state + "/" + line,)
    return out


@poppy
def llm_get_proposals_gen(task, state):
    """The same with a generator expression (closure over `state`)."""
    reply = llm(f"list: next steps for {task} after {state!r}", n=3)
    return tuple(state + "/" + line for line in reply.split("\n"))


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
def tree_of_thoughts(task):
    states = ("",)
    for step in range(NUM_STEPS):
        new_states = tuple()
        for s in states:
            new_states += llm_get_proposals(task, s)
        values = get_values(task, new_states)
        states = topk(new_states, values, BEAM_WIDTH)
        print(states)
    return states


@poppy
def get_values_dup(task, states):
    """The paper's Fig. 2 input shape: repeated states hit the cache."""
    seen = frozenset()
    values = ()
    for idx, state in enumerate(states):
        if state in seen:
            print(f"{idx}: duplicate")
            values += (0,)
            continue
        seen = seen | frozenset((state,))
        value = llm_get_value(task, state)
        print(f"{idx}: {value}")
        values += (value,)
    return values


@poppy
def tot_beam(task, *, steps=2, width=1):
    states = ("root",)
    history = []
    for step in range(steps):
        candidates = ()
        for s in states:
            candidates += llm_get_proposals(task, s)
        scores = get_values(task, candidates)
        states = topk(candidates, scores, width)
        history.append((step, len(candidates), states[0]))
    log(f"beam done after {steps} steps")
    return states, history


@poppy
def score_sum(task, state, samples):
    total = 0
    for i in range(samples):
        total += int(llm(f"count: sample {i} of {state} for {task}"))
    return total


@poppy
def best_first(task, budget):
    frontier = [("start", 0)]
    expanded = 0
    best = ("start", 0)
    while frontier and expanded < budget:
        frontier.sort(key=lambda sv: -sv[1])
        state, value = frontier.pop(0)
        expanded += 1
        if value > best[1]:
            best = (state, value)
        for child in llm_get_proposals(task, state)[:2]:
            frontier.append((child, score_sum(task, child, 2)))
    return best, expanded


@poppy
def tot_step_report(task, states):
    values = get_values(task, states)
    lines = []
    for state, value in zip(states, values):
        mark = "*" if value == max(values) else " "
        lines.append(f"{mark} {state:<24} {value:>3}")
    return "\n".join(lines)


@poppy
def propose_many(task, seeds):
    out = {}
    for seed in seeds:
        out[seed] = llm_get_proposals(task, seed)
    return out


print(tree_of_thoughts("game of 24 with 4 7 8 8"))
print(get_values_dup("fix the bug", ("a", "a", "b", "b")))
print(tot_beam("plan a trip", steps=2, width=2))
print(score_sum("essay", "draft", 3))
print(best_first("prove lemma", 3))
print(tot_step_report("sort", ("x", "y", "z")))
print(propose_many("riddle", ["p", "q"]))
print(llm_get_proposals_gen("riddle", "p") == llm_get_proposals("riddle", "p"))
