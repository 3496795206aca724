def f(o, a, kw):
    o.m(*a)
    return g(1, *a, x=2, **kw), h(**kw)
