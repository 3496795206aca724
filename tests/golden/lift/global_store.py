def f(x):
    global counter
    before = counter
    counter = x
    return before, counter + len(str(x))
