# Issue 16's classify loop as users write it: `json.loads(llm(...))["label"]` in the try body,
# the retry in the handler, `log` in else and after. The body's first operation reads the
# attribute `loads` of the module `json`: a module attribute bound to a function is read out of
# program order under the host's guard (as a global is), so it does not wait for the previous
# iteration's `log` calls, and the 12 requests are in flight together.
# difftest: min_in_flight=12
import json

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.2)


@poppy
def classify_all(items):
    labels = []
    for it in items:
        try:
            label = json.loads(llm(f"count: classify {it}"))["label"]
        except (json.JSONDecodeError, KeyError, TypeError) as e:
            log(f"retry {it}: {type(e).__name__}")
            label = "strict-" + llm(f"count: classify strictly {it}")
        else:
            log(f"ok {it}")
        log(f"done {it}")
        labels.append(label)
    return labels


@poppy
def lookup_all(table, keys):
    found = []
    for k in keys:
        try:
            row = table[k]  # a KeyError caught at once, eagerly
            found.append(llm(f"describe {row}"))
        except KeyError as e:
            found.append(f"missing {e}")
    return found


print(classify_all([f"item{i}" for i in range(12)]))
print(lookup_all({"a": 1, "b": 2}, ["a", "x", "b", "y"]))
