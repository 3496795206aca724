def f(xs):
    ys = [g(x) for x in xs]
    return ys
