# Method calls on external results.
from poppy_jit import poppy
from _ext import llm


@poppy
def shape(words):
    for w in words:
        r = llm(f"describe {w}")
        print(r.upper().replace(" ", "_"), r.count("a"), r.startswith("oak"))
        print(r.split(" ")[0].title(), r.split(" ")[-1], len(r), r.find("about"))


shape(["river", "stone", "cloud"])
