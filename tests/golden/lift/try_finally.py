def f(items):
    out = []
    for it in items:
        try:
            out.append(g(it))
            if it:
                h(it)
        finally:
            log(it)
        k(it)
    return out
