def f(*args):
    return args
