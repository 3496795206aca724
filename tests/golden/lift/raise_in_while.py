def f(n):
    i = 0
    while True:
        i += 1
        if i > n:
            raise OverflowError(i)
        g(i)
