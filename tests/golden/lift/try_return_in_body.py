def f(d, k):
    try:
        return d[k]
    except KeyError:
        pass
    try:
        v = int(k)
    except ValueError as e:
        log(e)
        v = 0
    return v
