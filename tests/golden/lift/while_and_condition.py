def f(x):
    while more(x) and x < 10:
        x = x + 1
    return x
