def f(x):
    try:
        b = q(x)
        try:
            a = g(b)
        except E:
            a = 1
            raise
        c = r(a)
    finally:
        k(x)
    return c
