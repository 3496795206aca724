# A region (the loop filling `factors` from a reply) is given a list the run owns; it declines on
# it without touching it, so passing the list is no escape: the per-factor calls of both
# scenarios still overlap (before the fix the list followed the global order and each scenario's
# calls waited behind the previous scenario's print).
# difftest: min_in_flight=6
from poppy_jit import poppy
from _ext import llm, log


@poppy
def factors_of(scenario):
    factors = []
    for line in llm(f"list: factors of {scenario}").split("\n"):
        factors.append(line.split("-", 1)[0])
    return factors


@poppy
def infer(scenario):
    factors = factors_of(scenario)
    out = []
    for f in factors:
        out.append(llm(f"describe {scenario} {f}"))
    log(f"{scenario}: {out}")
    return len(out)


@poppy
def main():
    return [infer(s) for s in ("a", "b")]


print(main())
