# A SystemExit raised by a synchronous external (sys.exit in a tool) inside a try whose handlers
# do not match it (`except Exception`, `except ValueError`) is re-raised unchanged: the handlers
# do not run, nothing after it in program order runs, and the program exits with its code, as
# CPython's does: the caller (plain code) catches it with its code. (A handler that matches it:
# p571.)
import sys

from poppy_jit import poppy, sequential
from _ext import _traced, llm, log, set_latency_scale

set_latency_scale(0.1)


@sequential
def tool(cmd):
    with _traced("note", "sequential", "tool", cmd):
        if cmd.startswith("exit"):
            sys.exit(int(cmd.split()[1]))
        return f"ran {cmd}"


@poppy
def run_tools(cmds):
    out = []
    for c in cmds:
        try:
            out.append(tool(c))
        except ValueError:
            log("value error")
        except Exception as e:
            log(f"exception {e!r}")
        else:
            log(f"ok {c}")
        out.append(llm(f"count: after {c}"))
    return out


print(run_tools(["ls", "pwd"]))
try:
    print(run_tools(["ls", "exit 3", "pwd"]))
except SystemExit as e:
    print("exit", e.code, repr(e.__context__))
