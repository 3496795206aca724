def f(xs):
    for x in xs:
        if check(x):
            return x
    return None
