# Bare `except:` and bare `raise` combined with the rest: an else clause (not run after the
# handler, its own failure not caught), a `while True` retry loop left by break from the else
# and by return from the handler, a try nested in a bare handler whose handler re-raises, a bare
# handler in an internal helper called from a loop, `as`-less handlers reading sys.exc_info()
# through an external (the handled exception is the caught one), and a bare `raise` after a
# nested handler finished (the outer exception again).
import sys

from poppy_jit import poppy
from _ext import llm, log, lookup, set_latency_scale, write

set_latency_scale(0.1)


def describe():
    t, v, _ = sys.exc_info()
    return f"{t.__name__ if t else None}: {v}"


@poppy
def with_else(prompts):
    out = []
    for p in prompts:
        try:
            n = int(llm(p))
        except:
            log("handled " + describe())
            out.append(None)
        else:
            out.append(100 // n)
    return out


@poppy
def retry(limit):
    attempt = 0
    while True:
        try:
            reply = llm(f"count: {attempt}" if attempt >= 2 else f"fail: attempt {attempt}")
        except:
            attempt += 1
            if attempt > limit:
                return "gave up"
            continue
        else:
            write("last", reply)
            break
    return reply, attempt


@poppy
def nested_reraise(keys):
    out = []
    for k in keys:
        try:
            out.append(lookup(k)[12])
        except:
            try:
                out.append(int(k))
            except:
                log(f"not a number: {k}")
                if k == "stop":
                    raise
            log("outer " + describe())
    return out


def first_number(words):
    for w in words:
        try:
            return int(w)
        except:
            pass
    return None


@poppy
def numbers(sentences):
    return [first_number(s.split()) for s in sentences] + [first_number(llm(f"count: {s}").split()) for s in sentences]


@poppy
def reraise_after_nested(x):
    try:
        return {"a": 1}[x]
    except KeyError:
        try:
            int(x)
        except ValueError:
            log("inner handled " + describe())
        log("outer again " + describe())
        raise


print(with_else(["count: a", "fail: b", "count: c", "hello"]))
print(with_else(["count: zero?"]) if int(llm("count: zero?")) == 0 else "skip")
print(retry(3))
print(retry(1))
print(nested_reraise(["ab", "12", "longer key here", "x"]))
try:
    print(nested_reraise(["ab", "stop", "cd"]))
except ValueError as e:
    print("caller caught", e, repr(e.__context__))
print(numbers(["a 1 b", "none", "7 8"]))
try:
    reraise_after_nested("zz")
except KeyError as e:
    print("caller caught", repr(e), repr(e.__context__))
