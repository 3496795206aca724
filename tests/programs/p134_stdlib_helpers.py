# Standard-library helpers as orchestration code uses them on LLM replies: json round trips, re
# (findall, sub, match groups), collections (Counter, defaultdict, deque, namedtuple), itertools
# (chain, islice, product; groupby: p135), operator.itemgetter, textwrap, math, writing to sys.stdout.
# difftest: min_in_flight=2
import itertools
import json
import math
import operator
import re
import sys
import textwrap
from collections import Counter, defaultdict, deque, namedtuple

from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)
Scored = namedtuple("Scored", "name score")


@poppy
def json_roundtrip(topics):
    records = []
    for t in topics:
        records.append({"topic": t, "reply": llm(f"about {t}"), "n": int(llm(f"count: {t}"))})
    blob = json.dumps(records, sort_keys=True)
    back = json.loads(blob)
    return len(blob), back[0]["n"] + back[-1]["n"], sorted(back[0])


@poppy
def regex_parse(topic):
    text = llm(f"list: facts about {topic}", n=4)
    words = re.findall(r"([a-z]+)-(\d)", text)
    masked = re.sub(r"\d", "#", text)
    m = re.match(r"(\w+)-(\d)", text)
    return words, masked.replace("\n", " "), m.group(1) if m else None


@poppy
def counting(items):
    votes = Counter()
    by_reply = defaultdict(list)
    for it in items:
        r = llm(f"yesno: {it}")
        votes[r] += 1
        by_reply[r].append(it)
    return votes.most_common(1), dict(by_reply)


@poppy
def deque_window(items, k):
    window = deque(maxlen=k)
    sums = []
    for it in items:
        window.append(int(llm(f"count: {it}")))
        sums.append(sum(window))
    return sums, list(window)


@poppy
def named_scores(names):
    scored = []
    for n in names:
        scored.append(Scored(n, int(llm(f"count: score {n}"))))
    best = max(scored, key=operator.itemgetter(1))
    return best.name, best.score, sorted(scored, key=operator.attrgetter("score"))[0]


@poppy
def itertools_use(a, b):
    out = []
    for x in itertools.chain(a, b):
        out.append(lookup(x))
    pairs = []
    for p, q in itertools.product(a, b):
        pairs.append(p + q)
    first = list(itertools.islice(pairs, 2))
    return out, first


@poppy
def wrap_reply(topic, width):
    reply = llm(f"about {topic} " * 3)
    return textwrap.shorten(reply, width=width, placeholder="..."), textwrap.wrap(reply, width)[0]


@poppy
def math_on_replies(items):
    vals = []
    for it in items:
        vals.append(int(llm(f"count: m {it}")) + 1)
    return math.prod(vals), math.gcd(*vals[:2]), round(math.log(sum(vals)), 4), math.isqrt(sum(vals))


@poppy
def stdout_writes(items):
    for it in items:
        sys.stdout.write(f"> {it}: ")
        print(llm(f"about {it}")[:10])
    sys.stdout.write("done\n")
    return len(items)


@poppy
def max_by_get(items):
    scores = {}
    for it in items:
        scores[it] = int(llm(f"count: g {it}"))
    return max(scores, key=scores.get), min(scores.values())


print(json_roundtrip(["tea", "milk"]))
print(regex_parse("owls"))
print(counting(["a", "b", "c", "d", "e"]))
print(deque_window(["w1", "w2", "w3", "w4"], 2))
print(named_scores(["n1", "n2", "n3"]))
print(itertools_use(["a", "b"], ["c"]))
print(wrap_reply("tides", 30))
print(math_on_replies(["x", "y", "z"]))
print(stdout_writes(["s1", "s2"]))
print(max_by_get(["p", "q", "r"]))
