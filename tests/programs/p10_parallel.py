# Independent requests: under PYTHONPOPPY=1 they must overlap.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm


@poppy
def fan_out(topics):
    first = llm("essay on beginnings")
    last = llm("essay on endings")
    print(first)
    for t in topics:
        print(t, llm(f"essay on {t}"))
    print(last)


fan_out(("sun", "moon", "stars", "comets", "planets", "nebulae"))
