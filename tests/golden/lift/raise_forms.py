def f(xs, limit):
    out = []
    for x in xs:
        if x > limit:
            raise ValueError(f"too big: {x}") from None
        assert x, "empty"
        out.append(g(x))
    if not out:
        raise LookupError
    return out
