def f(xs):
    def first_big(ys):
        for y in ys:
            if y > 10:
                return y
        return None
    @dec
    def deco(y):
        return y
    g = lambda a, b=2: a + b
    return first_big(xs), deco(1), g(1)
