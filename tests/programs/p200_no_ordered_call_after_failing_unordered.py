# An unordered call that raises stops the program in CPython: no sequential call after it in
# program order may run under PYTHONPOPPY=1 either, even when its arguments are ready long
# before the failing call finishes (issue 14: they used to run speculatively). Here the loop's
# `note` calls for the items after the failing one must never run; the unordered calls of later
# iterations may (speculatively: the run raises as CPython does).
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, note


@poppy
def ask_each(topics):
    answers = []
    for t in topics:
        answers.append(llm(t))
        note(f"asked {t}")               # arguments ready at once: must still wait
    return answers


print(ask_each(["p", "q", "fail: r", "s", "t"]))
