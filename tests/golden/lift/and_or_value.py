def f(a, b):
    x = a and b
    return x
