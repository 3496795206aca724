def f(xs):
    gen = (g(x) for x in xs)
    return list(gen)
