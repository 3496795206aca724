# Object identity through compiled code (a list returned from a callee that mutated it, tuples
# aliased), a module-level config dict mutated (not rebound) by a helper between LLM calls, and a
# 20000-element input list (larger than the classifier's deep-check limit).
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)
CONFIG = {"mode": "a"}


def set_mode(m):
    CONFIG["mode"] = m


@poppy
def same(lst):
    lst.append(lookup("x"))
    return lst


@poppy
def identity_checks(lst, d):
    r = same(lst)
    t = (lst, d)
    u = t
    return r is lst, t is u, t[0] is lst, same(r) is lst, len(lst)


@poppy
def config_flow(topics):
    out = []
    for t in topics:
        out.append(CONFIG["mode"] + ":" + llm(f"about {t}")[:4])
        set_mode(t)
    return out, CONFIG


@poppy
def big_input(items):
    first = []
    for it in items[:3]:
        first.append(llm(f"about {it}")[:5])
    return len(items), first, items[-1]


x = []
print(identity_checks(x, {}), x)
print(config_flow(["p", "q", "r"]))
print(big_input([f"s{i}" for i in range(20000)]))
