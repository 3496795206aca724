def f(n, c):
    if c:
        k = 1
    else:
        return 0
    ys = [q + k for q in range(n)]
    x = sum(x for q in range(n))
    return x
