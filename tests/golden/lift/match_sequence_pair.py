def f(x):
    match x:
        case [a, b]:
            return a
    return None
