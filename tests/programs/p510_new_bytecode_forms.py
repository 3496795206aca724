# Constructs each CPython version compiles to its own instructions (3.13: CALL_KW, TO_BOOL
# before a test and as a value (`not not x`), COMPARE_OP's to-bool bit, LOAD_FAST_LOAD_FAST and
# STORE_FAST_STORE_FAST, CONVERT_VALUE and FORMAT_SIMPLE/FORMAT_WITH_SPEC, SET_FUNCTION_ATTRIBUTE,
# a closure's cells, PUSH_NULL after a computed callable; 3.12: inlined comprehensions,
# KW_NAMES): the calls still overlap, values and the order of the sequential log are CPython's
# on every version.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log


class Tag:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"Tag({self.name!r})"


@poppy
def forms(topics, width, k):
    first, last = topics[0], topics[-1]
    last, first = first, last
    answers = [llm(t, style="loud", n=k) for t in topics if not t.startswith("-")]
    labels = [f"{t!r}|{t!s:>8}|{t!a}|{t:<{width}}|{len(t):03d}" for t in topics]

    def score(text, bonus=k, *, scale=width):
        return len(text) * scale + bonus + len(first)

    pick = (k > 1 and score) or len
    total = pick(answers[0])
    flipped = not (k < width)
    truths = (not not answers, not not k == width, not not first < last)
    log(f"{first} {last} {total} {flipped}")
    extra = llm(f"{Tag(first)!r} then {last!s:^12}", n=k)
    log(extra)
    return answers, labels, [score(a) for a in answers if a != answers[-1]], truths


print(forms(["kelp", "-skip", "fjord", "oak"], 6, 2))
