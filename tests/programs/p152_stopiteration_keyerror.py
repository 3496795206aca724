# Exceptions whose type matters to callers: a KeyError from indexing a dict with an LLM reply
# (caught by a plain-Python caller, which then continues), and finally a StopIteration from next()
# on an exhausted iterator inside compiled code, which must propagate unchanged (not be swallowed
# or turned into another error) with the same output before it.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)
ROUTES = {"yes": "approve", "no": "reject"}


@poppy
def route(item, table):
    verdict = llm(f"yesno: {item}")
    log(f"{item}: {verdict}")
    return table[verdict]


@poppy
def first_reply(items):
    it = iter(items)
    head = next(it)
    return llm(f"about {head}")[:6], next(it)


results = []
for item in ["a", "b", "c"]:
    try:
        results.append(route(item, {"yes": "approve"}))
    except KeyError as e:
        results.append(f"KeyError {e}")
print(results)
print(route("d", ROUTES))
print(first_reply(["p", "q"]))
print(first_reply(["only"]))
print("not reached")
