def f(xs, m):
    out = []
    for x in xs:
        with m as v:
            if x > 2:
                return g(x)
            if x == 2:
                continue
            if x < 0:
                break
            out.append(h(v))
        k(x)
    with m:
        if out:
            return out
        out.append(1)
        return None
