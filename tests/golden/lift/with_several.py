def f(a, b):
    with a as x, b as y:
        g(x, y)
