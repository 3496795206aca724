# A readonly operation raises (indexing a list, classified readonly because a list can change):
# the IndexError surfaces as in CPython and the sequential calls after it never run.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, write


@poppy
def pick(items, i):
    answers = []
    for it in items:
        answers.append(llm(f"rate {it}"))
    log(f"rated {len(answers)}")
    chosen = answers[i]  # IndexError
    write("chosen", chosen)
    log("never logged")
    return chosen


print(pick(["x", "y", "z"], 7))
