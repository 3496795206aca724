# Generated region code keeps reads of variables unnamed until a store rebinds them: swaps,
# walrus assignments inside expressions, augmented assignments of strings, lists and tuples,
# and a loop variable reused after the loop.
from poppy_jit import poppy
from _ext import log


@poppy
def fib(n):
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


@poppy
def walrus(n):
    out = []
    x = 1
    for i in range(n):
        out.append([x, (x := x * 2 + i), x])
    return out, x


@poppy
def augmented(n):
    s = "start"
    xs = [0]
    t = ()
    alias = xs
    for i in range(n):
        s += str(i)
        xs += [i]
        t += (i,)
        s = s[-6:] + s[:2]
    same = alias is xs
    i = i * 10
    return s, xs, t, same, i


@poppy
def rotate(n):
    a, b, c = 1, 2, 3
    k = 0
    while k < n:
        a, b, c = c, a, b
        k += 1
    log("rotated")
    return a, b, c


print(fib(90), fib(0), fib(1))
print(walrus(5))
print(augmented(8))
print(rotate(7))
