# A try statement inside an `if` whose test and the try body's own `if` jump to the same place
# (`if G: try: if y: raise ... except ...: pass` then `return f(x)`): the structure recovery once
# read the two tests as one condition (`G and y`) and translated the try body as plain code, so
# the handler was lost and the exception escaped (fuzzing, seed 777 case 2226). Such a function
# now falls back, with the reason "a try statement the structure recovery did not keep"; the
# results are CPython's either way.
from poppy_jit import poppy
from _ext import log

G = 10


@poppy
def guarded(x, y):
    if G:
        try:
            if y:
                raise "not an exception"
        except Exception as e:
            log(f"caught {type(e).__name__}")
    return abs(x)


@poppy
def in_comprehension(xs, y):
    return [2 for _ in xs if guarded(-3, y)]


print(guarded(-12, "dune"))
print(guarded(-12, ""))
print(in_comprehension([0, 1], "dune"))
