def f(x, y):
    if x is None:
        x = fetch()
    if y is not None:
        use(y)
    else:
        use(x)
    return x
