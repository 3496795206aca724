def f(x):
    if x:
        notify(x)
