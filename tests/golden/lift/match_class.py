def f(x):
    match x:
        case Point(0, y=yy) if yy > 1:
            return yy
        case str() as s:
            return s
    return None
