# @poppy functions that are themselves closures (made by a factory): free variables the function
# only reads are passed by value (read at entry, like globals), so the calls that use them stay
# parallel; a free variable it writes (`nonlocal`) or that a real inner function captures is the
# real cell, so writes are seen by the enclosing function; an empty cell raises CPython's
# NameError; two closures of one code object share the translation but not their cells.
# difftest: min_in_flight=4
from poppy_jit import poppy
from _ext import llm, log


def make_asker(model, prefix):
    calls = 0

    @poppy
    def ask_all(questions):
        nonlocal calls
        out = []
        for q in questions:
            out.append(llm(f"{model}: {prefix}{q}"))
            calls += 1
        log(f"{model} asked {calls}")
        return out

    def count():
        return calls

    return ask_all, count


def make_ranker(weight):
    @poppy
    def rank(answers):
        key = lambda a: (len(a) * weight, a)
        return sorted(answers, key=key)[0], [llm(a) for a in answers if len(a) > weight]

    return rank


def make_late():
    @poppy
    def read():
        return late_value + 1

    try:
        read()
    except NameError as e:
        print("NameError:", e)
    late_value = 41
    return read


ask_a, count_a = make_asker("alpha", "q-")
ask_b, count_b = make_asker("beta", "")
print(ask_a(["wolves", "herons", "otters", "lynxes"]))
print(ask_b(["kelp"]))
print(count_a(), count_b())
print(make_ranker(5)(["tiny", "medium", "enormous", "mid"]))
print(make_late()())
