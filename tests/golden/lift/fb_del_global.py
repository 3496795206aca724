def f(x):
    global counter
    del counter
    return x
