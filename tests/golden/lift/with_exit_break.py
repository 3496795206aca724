def f(items):
    for it in items:
        with lock:
            if it:
                break
            g(it)
