# The overlap the per-object walk's look-through of undecided branches gives (TRAQ's shape): per
# question, indices picked from a list the run built (`i not in picked`), reads of that list,
# three LLM calls, a loop over their answers (undecided until they arrive) and a print. The
# second question's reads reach back past the first question's undecided loop and its print
# (neither can reach the lists), so its calls start before the first question's answers are in:
# six LLM calls in flight at once (three when the reads wait).
# difftest: min_in_flight=6
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.1)


@poppy
def ask_all(questions, docs):
    notes = []
    for d in docs:
        notes.append(d.upper())
    out = []
    for q in questions:
        picked = []
        for i in range(len(notes)):
            if i not in picked:
                picked.append(i)
        answers = []
        for i in picked:
            answers.append(llm(f"answer {q} {notes[i]}"))
        best = ""
        for a in answers:
            if len(a) > len(best):
                best = a
        print(q, best[:12])
        out.append(len(best))
    return out


print(ask_all(("first question", "second question"), ("d one", "d two", "d three")))
