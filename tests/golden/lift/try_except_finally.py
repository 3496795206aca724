def f(x):
    try:
        y = g(x)
    except KeyError:
        y = None
    finally:
        log(x)
    return y
