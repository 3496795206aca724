# A `for` loop over a container the run did not make, which a call in the body changes through
# another name: a parameter that is also a module global, a helper's result, an element of
# another container, a free variable. CPython iterates the live container (a worklist is
# processed to the end, a dict grown midway raises); the compiled path iterates lazily too.
# Loops over containers the run made and never hands on (a split result, a display) still read
# them at once, with the body's calls overlapping.
# difftest: min_in_flight=2
from poppy_jit import poppy, sequential
from _ext import llm, set_latency_scale

set_latency_scale(0.1)

WORK = [1, 2]
REG = {"a": 1, "b": 2}
BOX = {"jobs": [10]}


@sequential
def more(x):
    if len(WORK) < 5:
        WORK.append(x + 10)


@sequential
def grow(k):
    REG[k + "x"] = 0


@sequential
def more_jobs(x):
    if len(BOX["jobs"]) < 3:
        BOX["jobs"].append(x + 1)


def the_work():
    return WORK


@poppy
def over_parameter(work):
    seen = []
    for x in work:
        more(x)
        seen.append(x)
    return seen


@poppy
def over_result():
    seen = []
    for x in the_work():
        more(x)
        seen.append(x)
    return seen


@poppy
def over_element(box):
    seen = []
    for x in box["jobs"]:
        more_jobs(x)
        seen.append(x)
    return seen


@poppy
def over_enumerate(work):
    seen = []
    for i, x in enumerate(work):
        more(x)
        seen.append((i, x))
    return seen


@poppy
def over_dict(reg):
    seen = []
    for k in reg:
        grow(k)
        seen.append(k)
    return seen


def make_closure():
    items = [1]

    @sequential
    def add(x):
        if len(items) < 4:
            items.append(x * 2)

    @poppy
    def over_free_variable():
        seen = []
        for x in items:
            add(x)
            seen.append(x)
        return seen
    return over_free_variable


@poppy
def private_split(text):
    out = []
    for word in text.split(","):
        reply = llm(f"echo: {word}")
        if reply == "":
            reply = "-"
        print(word, reply)
        out.append(reply)
    return out


print(over_parameter(WORK), WORK)
WORK[:] = [1, 2]
print(over_result(), WORK)
print(over_element(BOX), BOX)
WORK[:] = [1, 2]
print(over_enumerate(WORK), WORK)
try:
    print(over_dict(REG))
except RuntimeError as e:
    print("RuntimeError:", e, REG)
print(make_closure()())
print(private_split("a,b,c"))
