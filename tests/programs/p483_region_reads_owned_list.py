# A region given a list the run owns only reads it: it is ordered after the appends of pending
# answers to that list (and before the sequential call that gets the list later), against that
# list alone — so the calls around it still overlap. Were it unordered, it would count a list
# still missing answers; had it let the list escape (ordered in the global order), the second
# topic's `more` calls would wait behind the first topic's log (4 in flight at most, not 8).
# difftest: min_in_flight=8
from poppy_jit import poppy, sequential
from _ext import llm, log, set_latency_scale

set_latency_scale(0.5)


@sequential
def archive(items):
    items.append("archived")


@poppy
def lengths(topic):
    answers = []
    for i in range(2):
        answers.append(llm(f"about {topic} {i}"))
    total = 0
    longest = ""
    for ans in answers:
        total += len(ans)
        if len(ans) > len(longest):
            longest = ans
    more = []
    for i in range(4):
        more.append(llm(f"more {topic} {longest[:5]} {i}"))
    log(f"{topic}: {total} {longest}")
    archive(answers)
    n = 0
    for item in answers:
        n += len(item) > 0
    return total, n, len(more)


@poppy
def main():
    return [lengths(t) for t in ("rain", "snow")]


print(main())
