# Constants built inside @poppy code are the code object's own constants: `is` against an
# interned string, a constant tuple's identity across calls, and pickle bytes (which record shared
# references) are as in CPython.
import pickle
import sys

from poppy_jit import poppy
from _ext import log

KEY = "status"
SPACED = "not an identifier"


@poppy
def constants():
    k = "status"
    s = "not an identifier"
    t = ("status", "status", 1.5, -0.0, (1, 2))
    log(f"{k is KEY} {k is sys.intern('status')}")
    return k, s, t, t[0] is k, [x for x in ("a b", "a b")]


@poppy
def same_tuple():
    return ("x", "y", 3)


a = constants()
print(a[0] is KEY, a[3], a[2][0] is a[2][1], a[1] == SPACED)
print(pickle.dumps(a).hex())
print(pickle.dumps(constants()[2]).hex())
print(same_tuple() is same_tuple(), same_tuple() is same_tuple.__code__.co_consts[-1] or
      same_tuple() in same_tuple.__code__.co_consts)
