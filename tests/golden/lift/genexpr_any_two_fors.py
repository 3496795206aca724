def f(xs, ys):
    return any(x == y for x in xs for y in ys)
