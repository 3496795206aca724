def f(xs, k):
    return max((g(x, k) for x in xs), key=len)
