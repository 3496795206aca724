def f(xs):
    k = 3
    return sorted(xs, key=lambda x: x % k)
