# if/else on LLM results.
from poppy_jit import poppy
from _ext import llm, log


@poppy
def triage(items):
    for item in items:
        verdict = llm(f"yesno: is {item} urgent?")
        if verdict == "yes":
            log(f"{item}: escalate")
            print(llm(f"plan for {item}", style="loud"))
        else:
            print(f"{item}: later")


triage(["invoice", "outage", "newsletter", "breach", "lunch", "audit"])
