def f(xs):
    def pick(x):
        if x:
            y = x
        return y
    return [pick(x) for x in xs]
