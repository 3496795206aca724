# Output captured by the caller: a compiled function's prints under contextlib.redirect_stdout,
# print(file=...) into a StringIO passed in, and an io.StringIO report built inside @poppy code.
# The captured text and the order of everything printed must be CPython's.
# difftest: min_in_flight=2
import contextlib
import io

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)


@poppy
def chatty(items):
    for it in items:
        print(it, llm(f"about {it}")[:6])
    log("chatty done")
    return len(items)


@poppy
def to_file(items, out):
    for it in items:
        print(f"- {it}: {llm(f'count: {it}')}", file=out)
    return out.tell()


@poppy
def report(items):
    buf = io.StringIO()
    for it in items:
        buf.write(llm(f"summary of {it}").split()[0])
        buf.write(";")
    return buf.getvalue()


buf = io.StringIO()
with contextlib.redirect_stdout(buf):
    n = chatty(["a", "b", "c"])
print("captured:", buf.getvalue().replace("\n", " | "), n)
sink = io.StringIO()
print(to_file(["p", "q"], sink), sink.getvalue().splitlines())
print(report(["x", "y", "z"]))
