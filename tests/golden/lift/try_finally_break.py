def f(xs):
    for x in xs:
        try:
            if g(x):
                break
        finally:
            log(x)
    return xs
