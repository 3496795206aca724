# `break` after the third item of a generator: CPython pulls exactly three items, so the
# generator's later side effects (prints, sequential calls) must not happen.
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def produce(n):
    for i in range(n):
        log(f"produce {i}")
        print("producing", i)
        yield f"item{i}"
    print("producer exhausted")


@poppy
def first_three(n):
    seen = []
    for item in produce(n):
        seen.append(llm(f"count: {item}"))
        if len(seen) == 3:
            break
        print("continuing after", item)
    print("after loop")
    return seen


@poppy
def until_marker(n):
    count = 0
    for item in produce(n):
        if item == "item2":
            print("marker", item)
            break
        if item == "item0":
            continue
        count += 1
    return count


print(first_three(10))
print(until_marker(10))
