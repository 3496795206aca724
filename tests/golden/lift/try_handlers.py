def f(items):
    n = 0
    for it in items:
        try:
            v = g(it)
        except KeyError as e:
            if e.args:
                continue
            return e
        except (ValueError, TypeError):
            break
        except OSError as e:
            n = h(e)
        n = n + v
    return n
