# time.sleep called from @poppy code is a timer task of the runtime (src/host/pool.rs), not an
# inline stall of the evaluator thread; it stays sequential, so prints, logs and writes keep their
# order around it, while unordered calls after it may run during the sleep.
# difftest: min_in_flight=3
import time
from time import sleep

from poppy_jit import poppy
from _ext import llm, log, lookup, note, read, write


@poppy
def pace(label, secs):
    log(f"{label}: wait {secs}")
    time.sleep(secs)
    return label


@poppy
def main(topics):
    print("start")
    time.sleep(0.02)
    answers = []
    for i, t in enumerate(topics):
        a = llm(f"list: {t}")          # may start during the sleeps before it
        sleep(0.01 * (i % 2))         # the same function under another name; 0 s included
        answers.append(a.split("\n")[0])
        note(f"paced {t}")
    write("mode", "final")
    time.sleep(0)
    k = lookup(read("mode"))
    print(pace("tail", 0), k)
    time.sleep(0.01)
    log(", ".join(answers))
    return len(answers)


print("result", main(["rivers", "peaks", "caves", "dunes"]))
