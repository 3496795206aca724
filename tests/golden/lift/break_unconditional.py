def f(xs):
    for x in xs:
        g(x)
        break
