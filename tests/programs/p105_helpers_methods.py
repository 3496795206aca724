# Calls to unannotated helpers (run as sequential externals), methods of user classes and of
# builtin objects (str, list, dict), a @poppy method, and objects carried through loops.
# difftest: min_in_flight=2
from poppy_jit import poppy
from _ext import llm, log, lookup, note, set_latency_scale

set_latency_scale(0.1)


def normalise(text):
    return " ".join(text.lower().split())


def score(text):
    return sum(ord(c) for c in text) % 97


class Memory:
    def __init__(self):
        self.items = []

    def remember(self, x):
        self.items.append(x)
        return len(self.items)

    def recall(self, n):
        return self.items[-n:]


class Agent:
    def __init__(self, name):
        self.name = name
        self.memory = Memory()

    @poppy
    def think(self, topic):
        a = llm(f"{self.name} thinks about {topic}")
        b = llm(f"{self.name} doubts {topic}")
        self.memory.remember(a)
        self.memory.remember(b)
        return self.memory.recall(1)


@poppy
def clean_replies(topics):
    out = []
    for t in topics:
        out.append(normalise(llm(f"describe {t}", style="loud")))
    return out


@poppy
def scored(topics):
    best, best_score = None, -1
    for t in topics:
        s = score(llm(f"pitch {t}"))
        if s > best_score:
            best, best_score = t, s
    return best, best_score


@poppy
def use_memory(topics):
    mem = Memory()
    for t in topics:
        mem.remember(lookup(t))
    return mem.recall(2), len(mem.items)


@poppy
def string_methods(topic):
    reply = llm(f"list: facts on {topic}", n=4)
    lines = reply.splitlines()
    firsts = []
    for line in lines:
        head, sep, tail = line.partition("-")
        firsts.append(head.capitalize() + sep + tail.zfill(3))
    return ", ".join(firsts).replace("-", ":"), reply.count("\n"), reply.upper().startswith("A")


@poppy
def list_dict_methods(keys):
    d = {}
    order = []
    for k in keys:
        d.setdefault(k, lookup(k))
        order.insert(0, k)
    order.reverse()
    popped = d.pop(keys[0])
    return sorted(d.items()), order, popped, d.get("missing", "none")


@poppy
def unannotated_note(topics):
    for t in topics:
        note(f"starting {t}")
        answer = llm(f"about {t}")
        note(f"done {t}: {len(answer)}")
    return len(topics)


@poppy
def agent_round(names, topic):
    out = []
    for n in names:
        a = Agent(n)
        out.append(a.think(topic))
    return out


@poppy
def builtins_mix(nums):
    replies = []
    for x in nums:
        replies.append(int(llm(f"count: {x}")))
    return min(replies), max(replies), sum(replies), len(replies), abs(-replies[0]), round(2.5)


@poppy
def isinstance_dispatch(values):
    out = []
    for v in values:
        if isinstance(v, str):
            out.append(llm(f"text {v}"))
        elif isinstance(v, int):
            out.append(lookup(f"n{v}"))
        else:
            log(f"skip {type(v).__name__}")
    return out


print(clean_replies(["Rain", "Snow"]))
print(scored(["a", "b", "c"]))
print(use_memory(["m1", "m2", "m3"]))
print(string_methods("owls"))
print(list_dict_methods(["x", "y", "z"]))
print(unannotated_note(["u", "v"]))
print(agent_round(["ada", "bob"], "tea"))
print(Agent("cy").think("coffee"))
print(builtins_mix([1, 2, 3]))
print(isinstance_dispatch(["s", 4, 2.5, None, "t"]))
