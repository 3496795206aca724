# Internal regions: loops of arithmetic with break, continue, while/else-like flags and nested
# loops run as one generated function; their live-outs (including loop variables that leak after
# the loop) must be CPython's.
from poppy_jit import poppy
from _ext import log


@poppy
def scan(n, stop):
    total = 0
    found = None
    for i in range(n):
        if i % 3 == 0:
            continue
        if i * i > stop:
            found = i
            break
        total += i
    last = i
    k = 0
    while True:
        k += 1
        if k >= 5:
            break
    pairs = 0
    for a in range(4):
        for b in range(a):
            if (a + b) % 2:
                continue
            pairs += a * b
    log(f"scan {n} {stop}")
    return total, found, last, k, pairs, a, b


@poppy
def collatz(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps


print(scan(50, 200))
print(scan(10, 10 ** 6))
print([collatz(x) for x in (1, 7, 27, 97)])
