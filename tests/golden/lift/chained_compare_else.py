def f(a, b, c):
    if a < b < c:
        x = g(b)
    else:
        x = h(b)
    return x
