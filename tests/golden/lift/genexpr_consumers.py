def f(xs, sep):
    a = "".join(g(x) for x in xs)
    b = sep.join(str(x) for x in xs if x)
    c = sum((len(x) for x in xs), 10)
    d = sorted((g(x) for x in xs), reverse=True)
    return a, b, c, d
