# A loop of arithmetic with continue: the stretch from `total = 0` to the loop is one region;
# `total` is its only live-out, `n` and `range` its live-ins.
def f(n):
    total = 0
    for i in range(n):
        if i % 3 == 0:
            continue
        total += i * i
    return total
