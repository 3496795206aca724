def f(xs):
    x = "outer"
    ys = [x * 2 for x in xs]
    return x, ys
