def f(x):
    global counter
    counter = x
    return x
