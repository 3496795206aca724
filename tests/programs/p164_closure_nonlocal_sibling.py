# A @poppy closure whose free variable a sibling helper rebinds with `nonlocal`: each read of it
# is made through the cell in program order (readonly), so it sees the rebinding; a free variable
# nothing rebinds (`prefix`) is read once, at entry, and the llm calls using it still overlap.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def make():
    mode = "draft"
    prefix = "about"
    rounds = 0

    def switch(to):
        nonlocal mode, rounds
        mode = to
        rounds += 1

    @poppy
    def run(topics):
        out = [llm(f"{prefix}: {t}") for t in topics]
        switch("final")
        log(f"mode {mode} after {rounds} switch")
        out.append(llm(f"{mode}: summary"))
        switch("done")
        return mode, rounds, out

    return run


run = make()
print(run(["a", "b"]))
print(run(["c"]))
