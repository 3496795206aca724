# An orchestration loop: plan steps, dispatch them until a budget runs out, collect results in a
# dict keyed by step, retry failures once (while loop), and stop on a sentinel.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup


@poppy
def orchestrate(goal, *, budget=6):
    plan = llm(f"list: steps for {goal}", n=5).split("\n")
    results = {}
    spent = 0
    for step in plan:
        if spent >= budget:
            log("budget exhausted")
            break
        name, _, index = step.partition("-")
        cost = 2 if name in ("oak", "pine") else 1
        spent += cost
        results[step] = (lookup(name), llm(f"do {name}"))
    else:
        log("plan complete")
    tries = 0
    while tries < 2 and not results:
        tries += 1
        results["fallback"] = (lookup("fallback"), llm("do fallback"))
    summary = ""
    for k, (where, what) in results.items():
        summary += f"{k}@{where} "
    return summary.strip(), spent


print(orchestrate("a picnic"))
print(orchestrate("a trip", budget=2))
