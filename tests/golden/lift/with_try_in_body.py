def f(items):
    out = []
    with section("classify") as name:
        for it in items:
            try:
                out.append(g(it))
            except KeyError as e:
                out.append(name)
    return out
