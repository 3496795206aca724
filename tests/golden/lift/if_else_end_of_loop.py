def f(xs):
    for x in xs:
        if x:
            g(x)
        else:
            h(x)
