# `match` statements in compiled code: literal, capture, wildcard, value, or, sequence (with a
# star), mapping (with **rest), class (positional via __match_args__ and keyword, builtins'
# self-matching), guards and `as`. The LLM calls in the case bodies of a loop overlap across its
# iterations; the logs keep CPython's order.
# difftest: min_in_flight=4
import enum
from dataclasses import dataclass

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.2)


class Kind(enum.Enum):
    NOTE = "note"
    TASK = "task"


@dataclass
class Ticket:
    id: int
    title: str
    tags: tuple = ()


@poppy
def route(event):
    match event:
        case {"type": "message", "text": str(text), **meta}:
            reply = llm(f"reply to {text}", n=1)
            return f"msg {len(meta)} {reply.strip()}"
        case {"type": "ping"}:
            return "pong"
        case _:
            return None


@poppy
def shape(item):
    match item:
        case [] | ():
            return "empty"
        case [x]:
            return f"one {x}"
        case [first, *middle, last] if middle:
            return f"many {first}..{last} ({len(middle)} inside)"
        case (a, b):
            return f"pair {a} {b}"
        case _:
            return "not a sequence"


@poppy
def triage(ticket):
    match ticket:
        case Ticket(id=0):
            return "invalid"
        case Ticket(_, title, tags=("urgent", *_)) as t:
            summary = llm(f"escalate {title}", style="short")
            return f"urgent #{t.id}: {summary.splitlines()[0]}"
        case Ticket(i, title) if i > 100:
            return f"old #{i} {title}"
        case Ticket(title=title):
            return f"normal {llm(f'label {title}', n=1).strip()}"


@poppy
def kinds(values):
    out = []
    for v in values:
        match v:
            case Kind.NOTE:
                out.append("note")
            case Kind.TASK | "task":
                out.append("task")
            case int(n) | float(n) if n < 0:
                out.append(f"negative {n}")
            case bool() | None:
                out.append(f"flag {v}")
            case int() | float():
                out.append(f"number {v}")
            case str(s):
                out.append(f"text {llm(s, n=1).strip()}")
            case _:
                out.append("other")
    return out


@poppy
def summaries(tickets):
    out = []
    for t in tickets:
        match t:
            case Ticket(title=title, tags=(first, *_)):
                out.append(llm(f"summarize {title} tagged {first}", n=1))
            case Ticket(i, title):
                out.append(llm(f"summarize #{i} {title}", n=1))
    return [s.strip() for s in out]


@poppy
def main(events, items, tickets, values):
    print(summaries(tickets))
    routed = [route(e) for e in events]
    triaged = [triage(t) for t in tickets]
    for r in routed:
        log(f"routed {r}")
    print([shape(i) for i in items])
    for t in triaged:
        print(t)
    print(kinds(values))


main(
    [{"type": "message", "text": "hi", "user": "ann"}, {"type": "ping"}, {"type": "message", "text": 3},
     {"type": "message", "text": "yo"}, "noise"],
    [[], (), [1], (1, 2), [1, 2, 3, 4], "ab", range(5), {"a": 1}],
    [Ticket(0, "x"), Ticket(5, "disk full", ("urgent", "ops")), Ticket(300, "old bug"), Ticket(7, "typo", ("docs",))],
    [Kind.NOTE, "task", -1, -2.5, True, None, 3, 4.5, "hello", b"raw"],
)
