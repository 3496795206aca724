def f(args):
    return g(*args)
