# @readonly reads may move among themselves but never across @sequential writes.
from poppy_jit import poppy
from _ext import llm, read, write


@poppy
def config_flow():
    g = read("greeting")
    lim = read("limit")
    print(g, lim)
    write("greeting", llm(f"rewrite {g}"))
    m = read("mode")
    g2 = read("greeting")
    print(m, g2)
    write("mode", "final")
    print(read("mode"), read("limit"))


config_flow()
