def f(a, b):
    with a as x:
        with b as y:
            g(x, y)
        h(x)
