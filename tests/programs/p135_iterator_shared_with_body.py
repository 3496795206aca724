# Loops whose body shares the loop's iterator:
# * `for key, group in itertools.groupby(...)`: a compiled loop materialises its iterable first,
#   which would exhaust every group; the snapshot keeps each group's items (as an iterator);
# * `for line in it: ... next(it, None)` (skip the line after a marker): the body passes the
#   iterator to next(), so the function falls back and the line is skipped as in CPython.
import itertools
import operator

from poppy_jit import poppy
from _ext import llm, lookup, set_latency_scale

set_latency_scale(0.1)


@poppy
def group_sizes(words):
    sizes = []
    for key, grp in itertools.groupby(sorted(words, key=len), key=len):
        sizes.append((key, len(list(grp))))
    return sizes


@poppy
def summarise_groups(replies):
    out = []
    for first, grp in itertools.groupby(replies, key=operator.itemgetter(1)):
        members = list(grp)
        out.append(llm(f"summary of {len(members)} replies starting with {first}")[:12])
    return out


@poppy
def parse_skipping(lines):
    it = iter(lines)
    out = []
    for line in it:
        if line == "#skip":
            next(it, None)
            continue
        out.append(llm(f"about {line}")[:4])
    return out


print(parse_skipping(["a", "#skip", "b", "c"]))
print(group_sizes(["aa", "cc", "b", "ddd", "e", "ff"]))
keys = []
for k in ["k1", "k2", "x3", "k4", "k5"]:
    keys.append(lookup(k))
print(summarise_groups(sorted(keys)))
