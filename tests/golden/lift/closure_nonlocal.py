def f(xs):
    total = 0
    def add(x, scale=2):
        nonlocal total
        total += x * scale
        return total
    for x in xs:
        add(x)
    return total
