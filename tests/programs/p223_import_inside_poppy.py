# `import x` / `from x import y` inside a @poppy function compile (a sequential call of the
# builtins' __import__, binding the local) with CPython's results: the module objects, dotted
# imports, `as`, several names, a submodule, a module imported for the first time inside the
# run (its top-level code runs in program order), and CPython's ImportError messages.
# difftest: expect_rc=1
import sys
import types

from poppy_jit import poppy
from _ext import llm, log, set_latency_scale

set_latency_scale(0.1)

# A module that logs when it is first imported (its code runs at the import, in order).
_src = "from _ext import log\nlog('fresh module imported')\nVALUE = 42\n"
_mod = types.ModuleType("poppy_fresh_mod")
sys.modules.pop("poppy_fresh_mod", None)


class _Finder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name == "poppy_fresh_mod":
            import importlib.util
            return importlib.util.spec_from_loader(name, _Loader())
        return None


class _Loader:
    def create_module(self, spec):
        return None

    def exec_module(self, module):
        exec(_src, module.__dict__)


sys.meta_path.insert(0, _Finder())


@poppy
def uses_imports(words):
    import json
    import os.path
    import os.path as osp
    from collections import OrderedDict as OD, deque
    log("before the fresh import")
    from poppy_fresh_mod import VALUE
    log(f"after the fresh import {VALUE}")
    out = [llm(w) for w in words]
    d = OD((w, len(w)) for w in words)
    q = deque(out)
    return json.dumps({"n": len(q), "d": list(d.items()), "sep": os.path.sep, "same": osp is os.path,
                       "value": VALUE})


@poppy
def missing_name():
    log("about to import a missing name")
    from collections import no_such_name
    return no_such_name


@poppy
def missing_module(w):
    x = llm(w)
    import no_such_module_for_poppy
    return x


print(uses_imports(["a", "bb"]))
print(uses_imports(["c"]))
try:
    missing_name()
except ImportError as e:
    print("ImportError", e.name, e.msg.split(" (")[0])
print(missing_module("z"))
