def f(x):
    if x is None:
        raise ValueError("x")
    return x
