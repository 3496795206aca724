def f(pair):
    a, b = pair
    return a
