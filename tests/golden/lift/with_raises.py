def f(m, x):
    with m:
        raise ValueError(x)
    return x
