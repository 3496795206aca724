def f(a, b, c):
    x = a or b or c
    y = a and b or c
    return x, y
