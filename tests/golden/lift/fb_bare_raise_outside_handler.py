def f(x):
    if x:
        raise
    return x
