def f(y, r, limit):
    while (r <= limit and y >= step(r) or
           r > limit and y >= 2 * r):
        y = shrink(y)
        r += 1
    return y
