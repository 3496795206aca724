# An outer loop over a list the run built from external answers declines as a region (a list is
# not closed); each document's counting inside it is a region of its own, and so is the summary.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log


@poppy
def digest(topics):
    answers = []
    for t in topics:
        answers.append(llm(f"about {t}", n=15))
    sizes = []
    for a in answers:
        counts = {}
        for w in a.split():
            counts[w[:2]] = counts.get(w[:2], 0) + 1
        best = max(sorted(counts), key=counts.get)
        sizes.append((len(counts), best))
    line = ""
    for n, best in sizes:
        line += f"{n}:{best} "
    log(line)
    width = max([len(b) for _, b in sizes])
    return line.strip(), width, sum(n for n, _ in sizes)


print(digest(["rain", "sun", "snow", "wind"]))
