# One chat context (a list) per agent, each given to the model: a call with a mutable argument
# is a read of it (readonly), and reads overlap one another. Appending each pending reply to a
# list the run owns must not hold the next read up until the reply is known (issue 15, item 5):
# the append is ordered on its list alone, whatever the reply turns out to be.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.5)


@poppy
def round_of_replies(topics):
    contexts = [[f"agent {i} on {t}"] for i, t in enumerate(topics)]
    replies = []
    for ctx in contexts:
        replies.append(llm(ctx))         # readonly (reads ctx); the append waits for nothing
    for ctx, r in zip(contexts, replies):
        ctx.append(r)
    log(f"{len(replies)} replies")
    return contexts


@poppy
def comprehension_of_replies(contexts):
    return [llm(ctx) for ctx in contexts]


print(round_of_replies(["tea", "coffee", "water", "juice"]))
print(comprehension_of_replies([["a"], ["b"], ["c"]]))
