def f(a):
    x = g() if a else h()
    return x
