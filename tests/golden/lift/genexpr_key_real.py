def f(xs):
    return max((g(x) for x in xs), key=len)
