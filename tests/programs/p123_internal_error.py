# An error raised by an operation of the @poppy code itself (not by an external): int() of an LLM
# reply that is not a number, after earlier output and calls. Same output before it, same
# exception, nothing after it.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale, write

set_latency_scale(0.1)


@poppy
def parse_scores(items):
    scores = []
    for it in items:
        scores.append(int(llm(f"count: {it}")))
    log(f"parsed {len(scores)}")
    return scores


@poppy
def parse_loose(items):
    total = 0
    for it in items:
        reply = llm(f"rate {it}")
        log(f"rated {it}")
        total += int(reply)
        write(f"score/{it}", total)
    return total


print(parse_scores(["a", "b"]))
print(parse_loose(["c", "d"]))
print("not reached")
