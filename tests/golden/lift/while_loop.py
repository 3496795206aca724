def f(n):
    while n > 0:
        n = step(n)
    return n
