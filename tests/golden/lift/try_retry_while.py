def f(x):
    while True:
        try:
            y = g(x)
        except ValueError:
            x = fix(x)
            continue
        else:
            break
    return y
