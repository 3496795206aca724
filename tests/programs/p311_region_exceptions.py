# An exception inside a region: the region declines and the stretch runs operation by operation,
# so the error, its message and what ran before it are CPython's (caught and uncaught).
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import log


@poppy
def ratios(xs_len, zero_at):
    out = []
    acc = 0.0
    for i in range(xs_len):
        d = i - zero_at
        acc += 1 / d
        out.append(round(acc, 6))
    return out


@poppy
def safe(n, zero_at):
    try:
        return ratios(n, zero_at)
    except ZeroDivisionError as e:
        log(f"caught {e}")
        return None


@poppy
def keys(words):
    counts = {}
    for w in words.split():
        counts[w] += 1
    return counts


@poppy
def unbound(n):
    for i in range(n):
        pass
    return i


print(ratios(5, 10))
print(safe(5, 3))
try:
    keys("a b a")
except KeyError as e:
    print("KeyError", e)
try:
    print(unbound(3))
    print(unbound(0))
except UnboundLocalError as e:
    print("UnboundLocalError", e)
print(ratios(6, 2))
