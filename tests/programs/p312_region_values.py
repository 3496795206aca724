# Regions over big ints, floats (nan, inf, -0.0), complex, bytes, strings and f-strings with
# conversions and specs, unpacking, slices, displays and comprehensions.
from poppy_jit import poppy
from _ext import log


@poppy
def numbers(n):
    big = 1
    for i in range(1, n):
        big *= i
    f = 0.0
    for i in range(n):
        f -= 0.0 * i
    nan = float("nan")
    flags = []
    for x in (nan, float("inf"), -0.0, 1e308, 2 ** 70):
        flags.append((x == x, x > 0, str(x), repr(x * 10)))
    z = 0j
    for i in range(3):
        z += complex(i, -i)
    return big, f, flags, z, divmod(big, 97), big.bit_length(), -big // 7, big % -13


@poppy
def texts(words):
    out = ""
    for i, w in enumerate(words.split()):
        out += f"{i:>3}|{w!r}|{w.upper():-^9}|{len(w):#x};"
    parts = []
    for w in words.split():
        a, *rest = w
        parts.append((a, "".join(rest), w[::-1], w[1:3], w.encode()[:2]))
    squares = {i: i * i for i in range(6) if i % 2}
    letters = {c for c in words if c not in " e"}
    nested = [[j for j in range(i)] for i in range(4)]
    log("texts")
    return out, parts, squares, sorted(letters), nested, sorted(words.split(), key=len, reverse=True)


print(numbers(30))
print(texts("alpha beta gamma delta epsilon"))
