def f(xs):
    got = []
    for x in xs:
        try:
            got.append(g(x))
        except ValueError:
            got.append(None)
        except (KeyboardInterrupt, SystemExit) as e:
            got.append(e)
        except BaseException:
            break
    return got
