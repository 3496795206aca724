def f(xs):
    for x in xs:
        if not x:
            continue
        g(x)
