def f(xs, c):
    if c:
        k = 1
    ys = [x + k for x in xs]
    return ys
