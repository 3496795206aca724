def f(items):
    out = []
    for it in items:
        try:
            out.append(g(it))
            if it:
                h(it)
        finally:
            log(it)
            if out:
                log(out[-1])
        k(it)
    return out
