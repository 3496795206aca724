def f(items):
    out = []
    for it in items:
        try:
            v = g(it)
            try:
                w = int(v)
            except ValueError as e:
                log(e)
                continue
            out.append(w)
        except KeyError as e:
            try:
                out.append(h(e))
            except LookupError:
                break
        else:
            try:
                log(v)
            except OSError:
                pass
    return out
