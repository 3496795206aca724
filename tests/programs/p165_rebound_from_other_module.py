# A global rebound through `setattr(sys.modules[...], ...)` by a function of another module: the
# module scan cannot see it. Under PYTHONPOPPY=1 the first call reads MODE eagerly, the guard sees
# the rebinding when the call that made it returns and fails the run with a RuntimeError naming
# the global (never a silently stale value); MODE is then read in program order, and the second
# call gives CPython's result. The program prints the same lines either way.
import os
import sys
import types

from poppy_jit import poppy
from _ext import log

MODE = "old"

OTHER = types.ModuleType("other")
exec(
    "import sys\n"
    "from poppy_jit import sequential\n"
    "@sequential\n"
    "def poke(target, value):\n"
    "    setattr(sys.modules[target], 'MODE', value)\n",
    OTHER.__dict__,
)


@poppy
def run(value):
    before = MODE
    OTHER.poke(__name__, value)
    log(f"mode {before} -> {MODE}")
    return before, MODE


poppy_on = os.environ.get("PYTHONPOPPY") == "1"
try:
    first = run("new")
except RuntimeError as e:
    assert poppy_on, e
    assert "global 'MODE' was rebound by other.poke()" in str(e), e
    first = ("old", MODE)  # what CPython returns; the poke did happen
    log(f"mode old -> {MODE}")  # the line the failed run did not get to log
print(first)
MODE = "old"
print(run("newer"))
print(run("newest"))
