# Unpacking takes at most n + 1 items like CPython: an endless iterator fails with "too many
# values" (it must not be read to the end), after the earlier output.
# difftest: expect_rc=1
import itertools

from poppy_jit import poppy
from _ext import llm, log


@poppy
def pairs(words):
    for word in words:
        first, second = word.split("-")
        print(first, second, llm(f"join {first} and {second}"))
    log("pairs done")
    head, *rest = words
    print(head, rest)
    left, right = itertools.count()
    print("never printed", left, right)


pairs(["salt-pepper", "bread-butter"])
