# A module-level flag rebound between two calls of the @poppy function, and by a helper inside a
# call: each call reads it where CPython does.
from poppy_jit import poppy
from _ext import log

VERBOSE = False


def enable():
    global VERBOSE
    VERBOSE = True


@poppy
def step(x):
    if VERBOSE:
        log(f"verbose {x}")
    enable()
    if VERBOSE:
        log(f"now verbose {x}")
    return x * 2


print(step(1))
VERBOSE = False
print(step(2))
VERBOSE = True
print(step(3))
