def f(a, b):
    a += b
    a &= b
    a //= b
    a <<= b
    a @= b
    a *= b
    a %= b
    a |= b
    a **= b
    a >>= b
    a -= b
    a /= b
    a ^= b
    return a
