def f(xs):
    return sorted(xs, key=lambda x: -x)
