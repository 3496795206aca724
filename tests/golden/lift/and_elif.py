def f(a, b, c):
    if a and b:
        x = g(a)
    elif c:
        x = g(c)
    else:
        x = None
    return x
