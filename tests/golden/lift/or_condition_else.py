def f(a, b):
    if a or b:
        g()
    else:
        h()
