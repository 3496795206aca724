# A `for` loop over a generator with side effects pulls one item per iteration: the generator's
# prints and sequential calls interleave with the body's exactly as in CPython (they used to all
# come first, because the loop materialised its iterable).
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def numbers(n):
    for i in range(n):
        print("gen yields", i)
        log(f"gen {i}")
        yield i
    print("gen done")


@poppy
def consume(n):
    out = []
    for x in numbers(n):
        print("body got", x)
        log(f"body {x}")
        out.append(llm(f"count: {x}"))
    return out


@poppy
def nested(n):
    pairs = []
    for x in numbers(n):
        for y in numbers(x):
            pairs.append((x, y))
            print("pair", x, y)
    return pairs


@poppy
def over_map(words):
    total = 0
    for w in map(str.upper, words):
        print("word", w)
        total += len(w)
    return total


print(consume(4))
print(nested(3))
print(over_map(["ab", "cde"]))
