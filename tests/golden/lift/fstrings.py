def f(name, score, width):
    return f"{name!r}: {score:.2f} {name!s:>{width}} {name!a} {score}"
