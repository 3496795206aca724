# An exception raised in a worker process (executor="process") and not caught: the run fails with
# the same exception type and message as plain CPython; the calls before it in program order were
# made and their results used.
# difftest: expect_rc=1
from poppy_jit import poppy, sequential, unordered
from _ext import log


@unordered(executor="process")
def square(x):
    if x == 3:
        raise ZeroDivisionError(f"no square for {x}")
    return x * x


@sequential
def show(*xs):
    print(*xs)


@poppy
def main(n):
    total = 0
    for i in range(n):
        v = square(i)
        show("square", i, v)
        log(f"square {i}")
        total += v
    return total


if __name__ == "__main__":
    print("total", main(6))
