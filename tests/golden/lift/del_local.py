def f(x):
    y = x
    del y
    return x
