# A bare `raise` in a handler re-raises the exception being handled as it is: the same object,
# its traceback pointing at the line that raised it (CPython adds no entry for the `raise`), its
# `__context__` unchanged; after the handler's own calls (a log line before the re-raise runs, in
# program order). In nested handlers it re-raises the innermost one's exception, and the outer
# one's again once the inner handler is over. A handler that re-raises only some exceptions (a
# retry loop that gives up), a re-raise caught by the caller (plain code), and one that escapes
# the program (exit status 1, CPython's traceback line).
# difftest: expect_rc=1
import traceback

from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale

set_latency_scale(0.1)

_OURS = ("p572", "_ext")


def frames(e):
    return [(f.name, f.lineno) for f in traceback.extract_tb(e.__traceback__)
            if any(o in f.filename for o in _OURS)]


@poppy
def relog(prompts):
    out = []
    for p in prompts:
        try:
            out.append(int(llm(p)))
        except ValueError as e:
            log(f"bad reply to {p}: {e}")
            if "fail" in p:
                raise
            out.append(-1)
    return out


@poppy
def nested(keys):
    seen = []
    for k in keys:
        try:
            seen.append(lookup(k)[10])
        except IndexError:
            try:
                seen.append({"a": 1}[k])
            except KeyError:
                log(f"no key {k}")
                if k == "inner":
                    raise
            if k == "outer":
                raise
    return seen


@poppy
def bare_all(x):
    try:
        return 10 // x
    except:
        log(f"division by {x}")
        raise


for args in (["count: 1", "hello", "count: 2"], ["count: 3", "fail: no", "count: 4"]):
    try:
        print(relog(args))
    except ValueError as e:
        print("caller caught", type(e).__name__, e, frames(e), repr(e.__context__))

for keys in (["a", "b"], ["a", "inner", "b"], ["a", "outer", "b"]):
    try:
        print(nested(keys))
    except (IndexError, KeyError) as e:
        print("caller caught", type(e).__name__, e, frames(e), repr(e.__context__))

print(bare_all(5))
try:
    bare_all(0)
except ZeroDivisionError as e:
    print("caller caught", e, frames(e))
print(bare_all(None))
