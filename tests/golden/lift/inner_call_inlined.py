def f(xs, style):
    n = 0
    def ask(x):
        nonlocal n
        n += 1
        if not x:
            return None
        return llm(x, style)
    shout = lambda s: s.upper()
    outs = []
    for x in xs:
        outs.append(shout(ask(x)))
    return outs, n
