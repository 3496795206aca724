def f(a, b, xs):
    for x in xs:
        with a, b as v:
            if x:
                return g(x)
            if v:
                break
            h(x)
    return 0
