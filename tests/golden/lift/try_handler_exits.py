def f(xs):
    for x in xs:
        try:
            if x > 2:
                return g(x)
            y = h(x)
        except ValueError as e:
            if e.args:
                break
            continue
        except KeyError:
            return None
        else:
            k(y)
        finally:
            log(x)
    return 0
