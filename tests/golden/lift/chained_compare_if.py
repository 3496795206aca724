def f(a, b, c):
    if a < b < c:
        g(b)
