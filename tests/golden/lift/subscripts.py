def f(d, xs, i):
    a = d["key"]
    b = xs[i][0]
    return d[a, b]
