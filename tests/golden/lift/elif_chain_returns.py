def f(x):
    if x == 0:
        return True
    elif x == 1:
        return True
    elif x == 2:
        return False
    return check(x)
