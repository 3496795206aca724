# Issue 16's motivating loop (its try/except/else part): each item's label is parsed from an
# LLM reply; a reply that is not JSON or has no "label" is retried with a stricter prompt. Under
# PYTHONPOPPY=1 the first requests of all 12 items are in flight together (then the retries
# together), with the log lines in CPython's order. `as_json`, an unannotated helper called in
# the try body, is a catching call (never inlined), hence sequential: it waits for the previous
# items' log lines, but the next item's request, before it in its own body, does not wait for it
# (each operation of a gated try body is followed by `is_caught`, a runtime helper that reads no
# state of its argument: unordered whatever the value is).
# difftest: min_in_flight=12
import json

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


def as_json(reply):
    n = int(reply)
    if n % 4 == 0:
        return "not json"
    if n % 4 == 1:
        return json.dumps({"lbl": n})
    return json.dumps({"label": f"L{n}"})


@poppy
def classify_all(items):
    labels = []
    for it in items:
        try:
            label = json.loads(as_json(llm(f"count: classify {it}")))["label"]
        except (json.JSONDecodeError, KeyError) as e:
            log(f"retry {it}: {type(e).__name__}")
            label = "strict-" + llm(f"count: classify strictly {it}")
        else:
            log(f"ok {it}")
        log(f"done {it}")
        labels.append(label)
    return labels


print(classify_all([f"item{i}" for i in range(12)]))
