def f(a):
    return [-a, +a, ~a, not a]
