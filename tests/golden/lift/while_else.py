def f(x):
    while x > 0:
        if g(x):
            continue
        x = step(x)
        if h(x):
            break
    else:
        print("exhausted")
    print("after")
    return x
