def f(n):
    for x in gen(n):
        if x > 2:
            return x
        g(x)
    return None
