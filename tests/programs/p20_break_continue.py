# break, continue and return inside for loops over LLM answers.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log


@poppy
def screen(items):
    kept = []
    for i, item in enumerate(items):
        if item.startswith("#"):
            continue
        if i >= 7:
            log(f"stop at {item}")
            break
        answer = llm(f"summary of {item}")
        if item == "skip-me":
            continue
        kept.append(answer)
    return kept


@poppy
def first_urgent(items):
    for item in items:
        verdict = llm(f"yesno: is {item} urgent?")
        if verdict == "yes":
            return item
        log(f"{item} can wait")
    return None


print(screen(["alpha", "#comment", "beta", "skip-me", "gamma", "delta", "#x", "eps", "zeta"]))
print(first_urgent(["invoice", "outage", "newsletter", "breach", "lunch"]))
print(first_urgent([]))
