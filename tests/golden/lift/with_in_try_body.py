def f(m):
    try:
        with m as v:
            g(v)
    except KeyError:
        pass
