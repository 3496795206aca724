def f(path):
    with open(path) as fh:
        data = fh.read()
    return data
