def f(xs):
    for x in xs:
        if check(x):
            break
        g(x)
    return xs
