def f(xs):
    return consume(g(x) for x in xs)
