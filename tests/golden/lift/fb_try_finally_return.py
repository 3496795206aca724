def f(x):
    try:
        return g(x)
    finally:
        log(x)
