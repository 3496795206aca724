# Errors of `match` in compiled code are CPython's, raised in program order: a class pattern with
# too many positional sub-patterns raises TypeError after the calls before it ran.
# difftest: expect_rc=1
from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.2)


class Plain:
    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return f"Plain({self.v})"


@poppy
def check(items):
    for it in items:
        note = llm(f"look at {it!r}", n=1)
        match it:
            case Plain(v=v) if v > 1:
                log(f"big plain {v}")
            case Plain(v):
                log(f"plain {v}")
            case _:
                log(f"other {note.strip()}")
    return len(items)


print(check([1, "two"]))
print(check([Plain(3), 4, Plain(0)]))
