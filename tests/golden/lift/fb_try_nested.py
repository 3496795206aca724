def f(x):
    try:
        y = g(x)
    except KeyError as e:
        try:
            y = h(e)
        except ValueError:
            y = None
    return y
