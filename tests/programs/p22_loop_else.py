# for/else and while/else: the else clause runs only when no break left the loop.
from poppy_jit import poppy
from _ext import llm, log


@poppy
def find(topics, wanted):
    for topic in topics:
        answer = llm(f"yesno: is {topic} about {wanted}?")
        if answer == "yes":
            found = topic
            break
    else:
        found = None
        log(f"nothing about {wanted}")
    log(f"found {found}")
    return found


@poppy
def probe(n):
    i = 0
    while i < n:
        reply = llm(f"count: probe {i}")
        if int(reply) > 15:
            log(f"big at {i}")
            break
        i += 1
    else:
        log("no big reply")
    return i


for wanted in ["cats", "rain", "taxes"]:
    print(find(["pets", "weather", "money", "sports"], wanted))
print(probe(3), probe(12))
