# Orchestration that writes intermediate results to files and reads them back (open/write/close
# without `with`, os.path helpers), a with-statement version (fallback), and class hierarchies:
# a @poppy method using super() (a closure cell: fallback), an overridden hook called from a
# @poppy base-class method, and a class attribute registry of handlers.
# difftest: min_in_flight=2
import os
import tempfile

from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)
WORKDIR = tempfile.mkdtemp(prefix="poppy-corpus-")


@poppy
def save_replies(topics):
    paths = []
    for t in topics:
        reply = llm(f"about {t}")
        path = os.path.join(WORKDIR, f"{t}.txt")
        f = open(path, "w")
        f.write(reply)
        f.close()
        paths.append(os.path.basename(path))
    return paths


@poppy
def load_replies(names):
    out = {}
    for n in names:
        f = open(os.path.join(WORKDIR, n))
        out[n] = f.read().split()[0]
        f.close()
    return out, os.path.exists(os.path.join(WORKDIR, "nope.txt"))


@poppy
def save_with(name, topic):
    with open(os.path.join(WORKDIR, name), "w") as f:
        f.write(llm(f"about {topic}"))
    return os.path.getsize(os.path.join(WORKDIR, name)) > 0


class Base:
    prefix = "base"

    def hook(self, text):
        return text.lower()

    @poppy
    def process(self, items):
        out = []
        for it in items:
            out.append(self.hook(llm(f"{self.prefix} {it}", style="loud")))
        return out


class Child(Base):
    prefix = "child"

    def hook(self, text):
        return text[::-1][:8]

    @poppy
    def process_more(self, items):
        first = super().process(items)
        return first + [lookup(self.prefix)]


class Handlers:
    registry = {"up": str.upper, "len": len}

    @poppy
    def handle(self, kind, topic):
        fn = self.registry[kind]
        return fn(llm(f"about {topic}"))


names = save_replies(["sun", "rain"])
print(names)
print(load_replies(names))
print(save_with("w.txt", "wind"))
print(Base().process(["a", "b"]))
print(Child().process(["c"]))
print(Child().process_more(["d"]))
print(Handlers().handle("up", "x"), Handlers().handle("len", "y"))
for n in os.listdir(WORKDIR):
    os.remove(os.path.join(WORKDIR, n))
os.rmdir(WORKDIR)
