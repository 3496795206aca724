def f(items):
    d = {k: g(v) for k, v in items}
    s = {h(k) for k in d if k not in {1, 2}}
    return d, s
