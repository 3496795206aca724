def f(xs, k):
    return consume(g(x, k) for x in xs)
