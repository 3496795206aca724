def f(xs):
    if any(check(x) for x in xs):
        return "some"
    return all(x > 0 for x in xs if x)
