def f(xs):
    y = 0
    for x in xs:
        if x:
            del y
        else:
            y = x
    return y
