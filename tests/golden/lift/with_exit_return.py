def f(path):
    with open(path) as fh:
        if fh.readable():
            return fh.read()
        log(path)
