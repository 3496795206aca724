def f(x):
    try:
        return g(x)
    except:
        return None
