def f(pairs, xs):
    for k, v in pairs:
        log(k, v)
    for i, x in enumerate(xs):
        log(i, x)
    first, *middle, last = xs
    return middle
