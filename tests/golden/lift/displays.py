def f(a, b, rest, extra):
    d = {"a": a, "b": b}
    e = {a: b, **extra}
    s = {a, b, *rest}
    l = [a, *rest, b]
    t = (a, *rest)
    return d, e, s, l, t
