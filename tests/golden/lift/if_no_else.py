def f(x):
    y = x
    if not x:
        y = default()
    return y
