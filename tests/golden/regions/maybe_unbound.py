# A loop that reads a variable that may be unbound when the stretch starts is not a region (its
# UnboundLocalError stays where CPython raises it); a nested stretch inside another loop is, with
# strings, f-strings, unpacking and a while loop.
def f(pairs, flag):
    if flag:
        seen = 0
    for a in range(3):
        seen += a
    out = []
    for p in pairs:
        log(p)
        s = ""
        for k, v in p:
            s += f"{k}={v!r:>4};"
        n = 0
        while n < 3:
            n += 1
        out.append((s, n))
    return out
