def f(x):
    y = 0
    try:
        y = g(x)
    finally:
        log(y)
    return y
