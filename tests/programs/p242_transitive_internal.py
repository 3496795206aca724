# Transitive compilation: with the program's own module named internal, calls from a @poppy
# function into its plain helpers — functions, methods, static and class methods, helpers of
# helpers — are compiled and inlined at their first call, so the model calls inside them overlap
# across the whole orchestration (a tree search over proposals and a debate, in the style of real
# research code). Calls use defaults, keywords and keyword-only parameters.
# difftest: min_in_flight=6
# difftest: expect_rc=1
import poppy_jit
from poppy_jit import poppy
from _ext import llm, set_latency_scale

set_latency_scale(0.3)
poppy_jit.set_internal(["__main__"])


def propose_prompt(state, k=3, *, style="numbered"):
    return f"list: {style} {k} next steps from {state}"


def parse(text):
    return [line.strip() for line in text.split("\n") if line.strip()]


def value(state, judge="plain"):
    return int(llm(f"count: value of {state}", style=judge))


class Searcher:
    width = 2

    def __init__(self, task):
        self.task = task

    @staticmethod
    def join(state, step):
        return f"{state} > {step}"

    @classmethod
    def beam(cls, scored):
        return [s for _, s in sorted(scored, reverse=True)[:cls.width]]

    def expand(self, state):
        steps = parse(llm(propose_prompt(state, k=2)))
        return [self.join(state, s) for s in steps]

    def step(self, frontier):
        children = []
        for state in frontier:
            children.extend(self.expand(state))
        scored = [(value(c, judge="loud"), c) for c in children]
        return self.beam(scored)


class Agent:
    def __init__(self, name):
        self.name = name
        self.memory = []

    def respond(self, question, others=()):
        prompt = f"{self.name} answers {question}" + "".join(f" / {o}" for o in others)
        answer = llm(prompt)
        self.memory.append(answer)
        return answer


def debate(agents, question, rounds=2):
    answers = [a.respond(question) for a in agents]
    for _ in range(rounds - 1):
        answers = [a.respond(question, others=tuple(x for x in answers if x is not a.memory[-1]))
                   for a in agents]
    return answers


@poppy
def tree_search(task, depth=2):
    s = Searcher(task)
    frontier = [task]
    for _ in range(depth):
        frontier = s.step(frontier)
    return frontier


@poppy
def run_debate(question):
    agents = [Agent(n) for n in ("ann", "bob", "cyd")]
    final = debate(agents, question, rounds=2)
    return final, [len(a.memory) for a in agents]


def attempt(f, *args, **kwargs):
    """Takes *args/**kwargs: not inlined (a recorded reason), runs in CPython."""
    try:
        return f(*args, **kwargs)
    except TypeError as e:
        return str(e)


@poppy
def bad_calls():
    return [attempt(propose_prompt), attempt(propose_prompt, "s", 1, "x"),
            attempt(value, "s", judge="plain", extra=1), attempt(Searcher.join, "a"),
            attempt(propose_prompt, "s", style="terse", k=1)]


@poppy
def uncaught():
    first = value("ok")
    return first, value("s", "loud", extra=1)


print(tree_search("make 24 from 4 6 8 9"))
print(run_debate("is water wet?"))
print(bad_calls())
print(uncaught())
