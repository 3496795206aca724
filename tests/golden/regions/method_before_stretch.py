# `xs.extend([... for q in xs])`: the method is looked up before the comprehension, but only
# the call after the stretch uses it; it stays out of the region (inside, it would hand a
# reference to the list out of the region, which would then decline for any list) and the
# region only reads xs.
def f(xs, k):
    with open(k) as fh:
        xs.extend([q + 1 for q in xs])
    return xs
