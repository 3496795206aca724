# KNOWN BUG (xfail): `for key, group in itertools.groupby(...)` in compiled code. The loop
# materialises its iterable before the body runs (a sequential call consuming the iterator), which
# advances groupby's shared underlying iterator, so every `group` the body sees is already
# exhausted: len(list(group)) is 0 under PYTHONPOPPY=1 instead of the group's size. No error, no
# side effect involved — a silently different value (stdout and the prompts built from it).
# difftest: xfail=1
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


print(group_sizes(["aa", "cc", "b", "ddd", "e", "ff"]))
keys = []
for k in ["k1", "k2", "x3", "k4", "k5"]:
    keys.append(lookup(k))
print(summarise_groups(sorted(keys)))
