def f(xs):
    fs = [lambda: x for x in xs]
    k = 1
    g = lambda y: y + k
    k = 5
    return [h() for h in fs], g(1)
