# Sequential calls (unannotated note, @sequential log, print) interleaved with unordered ones.
from poppy_jit import poppy
from _ext import llm, log, note


@poppy
def interleave(n):
    for i in range(n):
        note(f"start {i}")
        a = llm(f"first {i}")
        log(a)
        b = llm(f"second {i}", style="loud")
        if i % 2 == 0:
            print("even", b)
        else:
            note(b)


interleave(4)
