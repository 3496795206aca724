def f(x):
    if x is None:
        return "none"
    y = process(x)
    return y
