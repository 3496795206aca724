def f(x):
    try:
        pass
    except E:
        x = 1
    return g(x)
