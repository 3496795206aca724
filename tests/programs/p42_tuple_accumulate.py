# Accumulating into a tuple with += is an unordered operation (both sides immutable), so the
# calls feeding it overlap; the same loop with list.append keeps program order.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log


@poppy
def gather(topics):
    acc = ()
    for t in topics:
        acc += (llm(f"summary of {t}"),)
    total = 0
    for a in acc:
        total += len(a)
    log(f"{len(acc)} summaries, {total} chars")
    lst = []
    for t in topics:
        lst.append(llm(f"title of {t}"))
    return acc, lst


acc, lst = gather(["rivers", "bridges", "ferns", "moths"])
print(acc)
print(lst)
