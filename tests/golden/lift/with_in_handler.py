def f(x):
    try:
        y = g(x)
    except KeyError:
        with lock:
            y = h(x)
    return y
