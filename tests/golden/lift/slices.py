def f(xs, i, j):
    head = xs[:i]
    mid = xs[i:j:2]
    xs[i:j] = head
    return mid
