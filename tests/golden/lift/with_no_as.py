def f(lock, items):
    out = []
    with lock:
        out.append(g(items))
    log(out)
    return out
