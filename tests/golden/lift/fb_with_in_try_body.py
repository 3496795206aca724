def f(m):
    try:
        with m:
            g()
    except KeyError:
        pass
