# Known gap found running an unmodified multi-agent debate program (issue 15): each agent keeps
# its own list of messages; a round appends to an agent's list, asks the model with it, appends
# the answer and prints it. The model call is @unordered but given a list it reads it (readonly),
# and the other agent's append (sequential: the list is the caller's) and the print (sequential)
# wait for every earlier call, so the agents of a round, whose calls read different lists, run
# one at a time. What must stay: each call sees its own list exactly as CPython passes it (the
# recorded argument), the answers appended and printed in program order.
# No sound fix: the lists are the caller's (also reachable as the module global `contexts`), and
# `print(i, answer)` formats a pending result of undeclared type, whose `__str__` may run any
# code — read or append to the next agent's list — so the next agent's `append` (and its model
# call, a read of that list) cannot run before that print without speculation. (In the debate
# program itself the lists are made by the run: there it takes ownership of the lists held in
# an owned list, not done; and its block still falls back for its try/except.)
# difftest: min_in_flight=2
# difftest: xfail=1
from poppy_jit import poppy
from _ext import lookup, set_latency_scale

set_latency_scale(0.5)


@poppy
def debate_round(contexts, r):
    for i, ctx in enumerate(contexts):
        ctx.append({"role": "user", "content": f"round {r} for agent {i}"})
        answer = lookup(ctx)
        ctx.append({"role": "assistant", "content": answer})
        print(i, answer)


contexts = [[{"role": "user", "content": f"question for agent {i}"}] for i in range(3)]
for r in range(2):
    debate_round(contexts, r)
print([len(c) for c in contexts])
