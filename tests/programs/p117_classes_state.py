# Orchestration with objects: @poppy methods, a state machine driven by LLM replies, a dataclass
# carrying results, a class-level config read, properties and staticmethods, and an object whose
# attributes are updated in a loop.
# difftest: min_in_flight=2
from dataclasses import dataclass, field

from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)


@dataclass
class Result:
    name: str
    score: int = 0
    notes: list = field(default_factory=list)


class Pipeline:
    STAGES = ("draft", "review", "polish")

    def __init__(self, topic):
        self.topic = topic
        self.log = []

    @property
    def size(self):
        return len(self.log)

    @staticmethod
    def clip(text, n):
        return text[:n]

    @poppy
    def run(self):
        text = self.topic
        for stage in self.STAGES:
            text = llm(f"{stage}: {self.clip(text, 20)}")
            self.log.append(stage)
        return self.size, text.split()[0]

    @poppy
    def run_twice(self, other):
        a = llm(f"a {self.topic}")
        b = llm(f"b {other.topic}")
        return a.split()[0], b.split()[0]


@poppy
def state_machine(start, max_steps):
    state = start
    path = [state]
    steps = 0
    while state != "done" and steps < max_steps:
        steps += 1
        reply = llm(f"yesno: advance from {state} {steps}")
        if state == "idle":
            state = "working" if reply == "yes" else "idle"
        elif state == "working":
            state = "review" if reply == "yes" else "working"
        elif state == "review":
            state = "done" if reply == "yes" else "working"
        path.append(state)
    return path


@poppy
def build_results(names):
    out = []
    for n in names:
        r = Result(n)
        r.score = int(llm(f"count: {n}"))
        r.notes.append(lookup(n))
        out.append(r)
    return out


@poppy
def best_result(names):
    results = build_results(names)
    best = results[0]
    for r in results:
        if r.score > best.score:
            best = r
    log(f"best is {best.name}")
    return best


@poppy
def run_pipelines(topics):
    out = []
    for t in topics:
        out.append(Pipeline(t).run())
    return out


@poppy
def counter_object(items):
    class Counter:
        n = 0
    c = Counter()
    for it in items:
        if llm(f"yesno: count {it}") == "yes":
            c.n += 1
    return c.n


@poppy
def attrs_in_loop(names):
    r = Result("acc")
    for n in names:
        r.score += len(llm(f"about {n}"))
        r.notes += [n]
    return r


print(Pipeline("rivers").run())
print(Pipeline("x").run_twice(Pipeline("y")))
print(state_machine("idle", 8))
print(build_results(["a", "b"]))
print(best_result(["c", "d", "e"]))
print(run_pipelines(["p", "q"]))
print(counter_object(["u", "v", "w"]))
print(attrs_in_loop(["m", "n"]))
