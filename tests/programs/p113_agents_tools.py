# Agent loops: an LLM picks a tool, the agent dispatches it through a dict of functions (externals
# and unannotated helpers), observes, and stops on "finish" or a step budget; plus a planner /
# executor split, a multi-agent round, and a scratchpad carried between steps.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, note, read, set_latency_scale, write

set_latency_scale(0.1)


def calculator(arg):
    return str(sum(int(x) for x in arg.split("+")))


def search(arg):
    return lookup(f"search/{arg}")


TOOLS = {"calc": calculator, "search": search, "read": read, "note": note}
ORDER = ("search", "calc", "read", "finish")


def choose(reply, step):
    """Map an LLM reply to a tool name deterministically."""
    return ORDER[(len(reply) + step) % len(ORDER)]


@poppy
def agent(goal, max_steps):
    scratch = []
    for step in range(max_steps):
        reply = llm(f"next action for {goal} step {step}")
        tool = choose(reply, step)
        if tool == "finish":
            log(f"finish at step {step}")
            break
        arg = "2+3" if tool == "calc" else goal
        if tool == "read":
            arg = "mode"
        obs = TOOLS[tool](arg)
        scratch.append(f"{tool}({arg})={obs}")
    return scratch


@poppy
def dispatch_table(calls):
    results = []
    for name, arg in calls:
        fn = TOOLS.get(name)
        if fn is None:
            results.append(f"unknown tool {name}")
            continue
        results.append(fn(arg))
    return results


@poppy
def plan(goal):
    return llm(f"list: plan for {goal}", n=3).split("\n")


@poppy
def execute(step):
    verdict = llm(f"yesno: can I do {step} alone")
    if verdict == "yes":
        return llm(f"do {step}")
    return search(step)


@poppy
def plan_and_execute(goal):
    steps = plan(goal)
    results = []
    for s in steps:
        results.append(execute(s))
    write("last_goal", goal)
    return results


@poppy
def react(question, max_turns=3):
    thought = llm(f"think about {question}")
    turn = 0
    answer = None
    while turn < max_turns and answer is None:
        turn += 1
        action = "search" if turn % 2 else "calc"
        observation = TOOLS[action](question if action == "search" else f"{turn}+{turn}")
        thought = llm(f"reflect {thought[:10]} on {observation}")
        if thought.endswith("done") or turn == max_turns:
            answer = thought.split()[0]
    return answer, turn


@poppy
def multi_agent(names, topic, rounds):
    transcript = []
    last = topic
    for r in range(rounds):
        for n in names:
            last = llm(f"{n} replies to {last[:15]}")
            transcript.append(f"{n}@{r}")
    return transcript, last.split()[0]


@poppy
def parallel_agents(goals):
    out = {}
    for g in goals:
        out[g] = agent(g, 3)
    return out


@poppy
def tool_by_reply(questions):
    out = []
    for q in questions:
        kind = llm(f"yesno: does {q} need math")
        tool = TOOLS["calc"] if kind == "yes" else TOOLS["search"]
        out.append(tool("1+1" if kind == "yes" else q))
    return out


@poppy
def router(requests):
    routes = {"math": calculator, "web": search}
    handled = []
    for kind, payload in requests:
        handler = routes[kind] if kind in routes else None
        handled.append(handler(payload) if handler else f"dropped {payload}")
    return handled


print(agent("book flight", 4))
print(dispatch_table([("calc", "1+2+3"), ("search", "owls"), ("nope", "x"), ("read", "limit")]))
print(plan_and_execute("bake bread"))
print(react("age of oak"))
print(multi_agent(["ann", "bo"], "rules", 2))
print(parallel_agents(["g1", "g2"]))
print(tool_by_reply(["q1", "q2", "q3"]))
print(router([("math", "4+4"), ("web", "news"), ("fax", "hello")]))
