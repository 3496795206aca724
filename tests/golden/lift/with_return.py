def f(items, m):
    for it in items:
        with m as v:
            if it:
                g(it)
            return v + it
