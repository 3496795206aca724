# Stretches inside a try statement: its body, a handler's body and its else each get their
# region (a region never raises: an exception makes it decline, and the stretch then runs
# operation by operation where the handlers catch what CPython's would).
def f(xs, n):
    try:
        t = 0
        for x in xs:
            t += x * x
    except TypeError:
        t = [str(x) for x in xs]
    else:
        t = [t + i for i in range(n)]
    return t
