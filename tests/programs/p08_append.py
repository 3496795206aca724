# Building a list with append (a sequential mutation of a local list).
from poppy_jit import poppy
from _ext import llm


@poppy
def collect(n):
    results = []
    for i in range(n):
        results.append(llm(f"item {i}"))
    results.append("end")
    print(len(results))
    for r in results:
        print(r)
    return results


out = collect(5)
print(out[-1], out[0])
