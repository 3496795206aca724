# Calls of inner functions from the @poppy body run inside it (their llm calls overlap), with
# late binding and nonlocal writes; an inner function passed to an external runs in CPython.
# difftest: min_in_flight=4
from poppy_jit import poppy
from _ext import llm, log


@poppy
def digest(topics, style):
    asked = 0

    def ask(t):
        nonlocal asked
        asked += 1
        if not t:
            return "-"
        return llm(f"about {t}", style)

    def pick(x):
        if x:
            last = x
        return last

    answers = [ask(t) for t in topics]
    log(f"asked {asked}")
    style = "loud"  # late binding: the next calls see it
    again = ask(topics[0])
    try_pick = [pick(x) for x in (1, 2, 3)]
    firsts = sorted(answers, key=lambda a: a.split()[-1])
    return answers, again, asked, try_pick, firsts


@poppy
def unbound_in_inner(xs):
    def pick(x):
        if x:
            last = x
        return last
    return [pick(x) for x in xs]


print(digest(("gulls", "", "terns", "auks", "puffins"), "plain"))
try:
    unbound_in_inner((1, 0))
except UnboundLocalError as e:
    print("UnboundLocalError", e)
