def f(n):
    i = 0
    while i < n:
        r = probe(i)
        if r:
            return r
        i += 1
    return None
