def f(xs):
    for x in xs:
        try:
            if x > 2:
                return g(x)
            if x == 2:
                continue
            y = h(x)
        finally:
            log(x)
        k(y)
    return None
