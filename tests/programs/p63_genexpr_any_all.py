# any()/all() over generator expressions stop at the first deciding item: later items' calls
# are not made (CPython's short circuit), and the trace shows it.
from poppy_jit import poppy
from _ext import llm, log


@poppy
def checks(items):
    found = any(llm(f"yesno: {i}") == "yes" for i in items)
    log(f"any {found}")
    every = all(llm(f"yesno: {i}") == "no" for i in items if i)
    log(f"all {every}")
    none_at_all = any(x for x in [])
    return found, every, none_at_all, all(len(i) > 0 for i in items)


print(checks(["a", "b", "c", "d", "e", "f", "g"]))
print(checks(["", "zz"]))
