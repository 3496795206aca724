def f(a, b):
    if a and check(b):
        return fetch(b)
    return None
