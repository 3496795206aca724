def f(path):
    with open(path) as fh:
        return fh.read()
