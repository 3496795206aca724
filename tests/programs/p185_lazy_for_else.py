# for/else over a generator: the else clause runs when the generator is exhausted, not after a
# break; an empty generator runs only the else clause.
from poppy_jit import poppy
from _ext import log, set_latency_scale

set_latency_scale(0.1)


def gen(items):
    for x in items:
        print("gen", x)
        yield x


@poppy
def search(items, target):
    for x in gen(items):
        log(f"compare {x}")
        if x == target:
            print("found", x)
            break
    else:
        print("not found", target)
        return None
    return target


@poppy
def empty_else():
    for x in gen([]):
        print("never", x)
    else:
        log("else of an empty generator")
    return "done"


print(search([1, 2, 3, 4], 2))
print(search([1, 2, 3], 9))
print(empty_else())
