# Builtin container methods (mutating ones sequential, reading ones readonly) and values of
# immutable types (namedtuple, frozen dataclass, Fraction, datetime, enum, frozenset) in
# operators and methods, mixed with parallel LLM calls.
# difftest: min_in_flight=2
import collections
import dataclasses
import datetime
import enum
import fractions
import json
import math

from poppy_jit import poppy
from _ext import llm, log

Point = collections.namedtuple("Point", "x y")


@dataclasses.dataclass(frozen=True)
class Score:
    name: str
    value: fractions.Fraction


class Level(enum.Enum):
    LOW = 1
    HIGH = 2


@poppy
def report(names):
    scores = dict()
    seen = set()
    base = datetime.date(2024, 1, 31)
    replies = ()
    for n in names:
        replies += (llm(f"count: {n}"),)
    i = 0
    for n in names:
        reply = replies[i]
        s = Score(n, fractions.Fraction(int(reply), i + 1))
        scores.setdefault(n, s)
        seen.add(n.upper())
        p = Point(i, len(reply))._replace(x=i * 2)
        lvl = Level.LOW
        if s.value > 3:
            lvl = Level.HIGH
        when = base + datetime.timedelta(days=p.x)
        print(n, p, s.value, lvl.name, when.isoformat(), math.sqrt(p.x + p.y))
        i += 1
    keys = sorted(scores.keys())
    frozen = frozenset(seen)
    values = dict()
    upper = []
    for k in keys:
        values.setdefault(k, str(scores[k].value))
        upper.append(k.upper())
    log(json.dumps(values, sort_keys=True))
    seen.discard(keys[0].upper())
    print(len(seen), len(frozen), frozen == frozenset(upper), Level.LOW in (lvl,))
    result = []
    for k in keys:
        result.append(scores[k])
    return result


print(report(["ash", "elm", "yew"]))
