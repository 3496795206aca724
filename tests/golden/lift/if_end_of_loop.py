def f(xs):
    for x in xs:
        g(x)
        if x:
            h(x)
    return xs
