# A failure inside an inner function inlined into a with or try body, raised by a builtin (no
# Python frame of its own): the handler and `__exit__` get a traceback, as in CPython (it was
# None: the failing call's frames could not be placed, and nothing else was left of them).
# Found by the program fuzzer (seed 813 on 3.13, the same on every version).
from poppy_jit import poppy
from _ext import lookup


class M:
    def __enter__(self):
        return self

    def __exit__(self, t, e, tb):
        print("exit", t and t.__name__, tb is not None, e is not None and e.__traceback__ is not None)
        return True


@poppy
def via_inner(s):
    def g(a):
        return int(a)

    with M():
        g(s)
    return lookup("after")


@poppy
def in_try(s):
    def g(a):
        return int(a) + 1

    try:
        g(s)
    except ValueError as e:
        print("caught", type(e).__name__, e.__traceback__ is not None)
    return lookup("done")


print(via_inner("x"), via_inner("7"), in_try("y"), in_try("8"))
