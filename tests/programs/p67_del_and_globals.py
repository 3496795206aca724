# `del x` of a local (then unbound: UnboundLocalError like CPython) and `global` stores, which
# are sequential effects that later reads in the function see.
from poppy_jit import poppy
from _ext import llm, log

counter = 0
mode = "draft"


@poppy
def bump(xs):
    global counter, mode
    before = counter
    for x in xs:
        counter = counter + len(llm(x))
    mode = "final"
    log(f"{before} {counter} {mode}")
    tmp = counter * 2
    del tmp
    return counter, mode


@poppy
def use_after_del(flag):
    y = llm("y")
    if flag:
        del y
    return y


print(bump(["cod", "eel"]), counter, mode)
print(use_after_del(False))
try:
    use_after_del(True)
except UnboundLocalError as e:
    print("UnboundLocalError", e)
