# Parallelism of common loop idioms, checked per function: each loop makes 8 independent LLM
# calls, and under PYTHONPOPPY=1 at least 6 of them must be in flight at once (a function that
# gets less exits with status 1 and a message, which the differential test reports). Idioms:
# dict store, filter + append, `+=` on an int and on a str, an unannotated call and a write after
# each reply, tuples appended then sorted, best-so-far selection, dict.get counting. Each function
# gets its own copy of the items: a list the caller also holds (the global itself) could be changed
# by a call in the body, so a loop over it takes its items one at a time in program order
# (docs/semantics.md, `for` loops).
# difftest: min_in_flight=6
import sys

import poppy_jit
from poppy_jit import poppy
import _ext
from _ext import llm, note, read, set_latency_scale, write

set_latency_scale(0.1)
ITEMS = [f"i{k}" for k in range(8)]


@poppy
def dict_store(items):
    scores = {}
    for it in items:
        scores[it] = int(llm(f"count: {it}"))
    return scores


@poppy
def filter_append(items):
    kept = []
    for it in items:
        if llm(f"yesno: {it}") == "yes":
            kept.append(it)
    return kept


@poppy
def sum_aug(items):
    total = 0
    for it in items:
        total += int(llm(f"count: {it}"))
    return total


@poppy
def note_after(items):
    out = []
    for it in items:
        r = llm(f"about {it}")
        note(f"got {len(r)}")
        out.append(r)
    return out


@poppy
def write_each(items):
    for it in items:
        write(it, llm(f"about {it}"))
    return read(items[0])


@poppy
def str_concat(items):
    s = ""
    for it in items:
        s += llm(f"about {it}")[:3]
    return s


@poppy
def list_of_tuples(items):
    out = []
    for it in items:
        out.append((it, llm(f"about {it}").split()[0]))
    return sorted(out)


@poppy
def best_of(items):
    best, score = None, -1
    for it in items:
        s = int(llm(f"count: {it}"))
        if s > score:
            best, score = it, s
    return best


@poppy
def dict_get_count(items):
    counts = {}
    for it in items:
        r = llm(f"yesno: {it}")
        counts[r] = counts.get(r, 0) + 1
    return counts


for f in (dict_store, filter_append, sum_aug, note_after, write_each, str_concat, list_of_tuples,
          best_of, dict_get_count):
    _ext.take_peak()
    print(f.__name__, f(list(ITEMS)))
    peak = _ext.take_peak()
    if poppy_jit.is_enabled() and peak < 6:
        sys.exit(f"{f.__name__}: at most {peak} LLM calls in flight, expected >= 6")
