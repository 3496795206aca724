def f(a, b):
    if a:
        if b:
            return 1
        return 2
    return a + b
