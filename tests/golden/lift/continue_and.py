def f(xs):
    for x in xs:
        if x and skip(x):
            continue
        use(x)
