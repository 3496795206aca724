# A reply parsed with `json.loads(s)` is a dict the run made (only without keywords: an
# `object_hook` may return an object someone else holds), so subscripting it is ordered against
# that dict alone, also in a try body (the check after each operation there, `is_caught(v)`, is
# no escape of `v`). With a hook returning a shared dict that a sequential call changes, the
# subscript still sees that change, in CPython's order.
import json
import time

from poppy_jit import poppy, sequential
from _ext import log

SHARED = {"label": "shared"}


def hook(d):
    return SHARED


@sequential
def relabel(x):
    time.sleep(0.02)  # a subscript wrongly taken for the run's own dict's would not wait
    SHARED["label"] = x


@poppy
def parsed(replies):
    out = []
    for r in replies:
        try:
            out.append(json.loads(r)["label"])
        except KeyError:
            out.append(None)
        except json.JSONDecodeError as e:
            out.append(f"bad at {e.pos}")
    return out


@poppy
def hooked(replies):
    out = []
    for r in replies:
        d = json.loads(r, object_hook=hook)
        relabel(r[-3:])
        out.append(d["label"])
        try:
            e = json.loads(r, object_hook=hook)
            relabel("x")
            out.append(e["label"])
        except KeyError:
            out.append(None)
    return out


@poppy
def kept(replies):
    docs = []
    with open(__file__) as fh:
        for r in replies:
            d = json.loads(r)
            docs.append(d)
            d["n"] = len(docs)
            log(d.get("label"))
    return docs, fh.closed


print(parsed(['{"label": "a"}', '{"lbl": 1}', 'nope', '{"label": "b"}']))
print(hooked(['{"label": "a1"}', '{"q": 2}']))
print(kept(['{"label": "a"}', '{"x": 1}']))
