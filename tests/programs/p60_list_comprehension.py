# List comprehensions inside @poppy code are loops of the function: their llm calls overlap.
# difftest: min_in_flight=5
from poppy_jit import poppy
from _ext import llm, log


@poppy
def answers(prompts, style):
    outs = [llm(p, style) for p in prompts]
    log(f"got {len(outs)}")
    short = [o[:12] for o in outs if "about" in o]
    print(short)
    return outs


out = answers(["tides", "glaciers", "dunes", "reefs", "caves", "rivers"], "loud")
print(out[0], out[-1])
