# f-strings with conversions and format specs.
from poppy_jit import poppy
from _ext import llm


@poppy
def table(names):
    for i in range(len(names)):
        name = names[i]
        n = llm(f"count: {name}")
        print(f"{i:>3}|{name!r:<12}|{n:>4}|{int(n) * 1.5:.2f}|{name.upper()!s}")


table(["ada", "grace", "barbara", "frances"])
