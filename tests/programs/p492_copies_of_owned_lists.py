# `tuple(lst)`, `list(lst)`, `dict(d)`, `set(s)` and `len` of a container the run created are
# reads of it, ordered per object (they may overlap other reads of it, and wait for its writes):
# each copy shows the container as it is at its place in program order — between appends of
# results still in flight, around a helper that mutates it, and inside a comprehension.
# difftest: min_in_flight=3
from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.5)


def plain_extend(xs, n):
    xs.extend(range(n))


@poppy
def snapshots(topics):
    answers = []
    views = []
    for t in topics:
        answers.append(llm(f"about {t}"))
        views.append(tuple(answers))
    return views, len(answers)


@poppy
def copies(keys):
    d = {}
    s = set()
    for k in keys:
        d[k] = lookup(k)
        s.add(k)
    c1, c2 = dict(d), set(s)
    d["extra"] = 1
    s.discard(keys[0])
    return sorted(c1), sorted(c2), list(d), sorted(s), list(list(d)) == list(d)


@poppy
def around_helper(n):
    xs = [1, 2]
    before = tuple(xs)
    plain_extend(xs, n)
    after = list(xs)
    log(f"{len(before)} then {len(after)}")
    return before, after


@poppy
def prompts(history, qs):
    ctx = list(history)
    outs = [lookup((q, tuple(ctx))) for q in qs]
    ctx.append("next")
    return outs, lookup(("final", tuple(ctx)))


def main():
    print(snapshots(["a", "b", "c", "d"]))
    print(copies(["k1", "k2", "k3"]))
    print(around_helper(3))
    print(prompts(["sys", "user"], ["x", "y", "z", "w"]))


main()
