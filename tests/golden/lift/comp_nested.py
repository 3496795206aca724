def f(xs, ys):
    grid = [[g(x, y) for y in ys] for x in xs]
    pairs = [(x, y) for x in xs for y in ys if x != y]
    return grid, pairs
