"""Runtime support for the Rust λO runtime: intrinsic operations, call classification, and the
executor that runs asynchronous and blocking externals.

Everything here is called from Rust (src/host/). It is deliberately plain Python: the annotation
tables are data that users and libraries extend (see `register`), and the executor is asyncio's own
machinery. Hot paths move to Rust when benchmarks say so.
"""
from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import functools
import operator
import types

from ._loop import get_loop

UNORDERED, READONLY, SEQUENTIAL = 0, 1, 2
_CLASS_BY_NAME = {"unordered": UNORDERED, "readonly": READONLY, "sequential": SEQUENTIAL}

# ---------------------------------------------------------------------------------------------
# Mutability (PopPy §6.1): classification depends on the arguments at call time.

_IMMUTABLE_ATOMS = frozenset(
    {type(None), bool, int, float, complex, str, bytes, range, type(...), type(NotImplemented)}
)
_MUTABLE_BUILTINS = frozenset({list, dict, set, bytearray})


def is_immutable(x) -> bool:
    """Deeply immutable values of builtin types (tuples/frozensets of immutables included)."""
    t = type(x)
    if t in _IMMUTABLE_ATOMS:
        return True
    if t is tuple or t is frozenset:
        return all(is_immutable(e) for e in x)
    return False


def _is_builtin_data(x) -> bool:
    """Immutable, or a builtin container whose reads have no side effects."""
    if is_immutable(x):
        return True
    t = type(x)
    if t in _MUTABLE_BUILTINS:
        return True
    if t is tuple:
        return all(_is_builtin_data(e) for e in x)
    return False


def _by_mutability(args) -> int:
    if all(is_immutable(a) for a in args):
        return UNORDERED
    if all(_is_builtin_data(a) for a in args):
        return READONLY
    return SEQUENTIAL


# ---------------------------------------------------------------------------------------------
# Intrinsics: the callables that Bezoar's desugared operations lower to.


def _contains(a, b):
    return a in b


def _not_contains(a, b):
    return a not in b


def _is(a, b):
    return a is b


def _is_not(a, b):
    return a is not b


def _build_tuple(*xs):
    return xs


def _build_list(*xs):
    return list(xs)


def _build_string(*parts):
    return "".join(parts)


def _format_none(x, spec=""):
    return format(x, spec)


def _format_str(x, spec=""):
    return format(str(x), spec)


def _format_repr(x, spec=""):
    return format(repr(x), spec)


def _format_ascii(x, spec=""):
    return format(ascii(x), spec)


def _iter_snapshot(x):
    """Materialise the elements a `for` loop iterates over."""
    return tuple(x)


def bound_check(x):
    """Identity; lowering calls it on a possibly-unbound local so the error surfaces in order."""
    return x


_BINARY = ["add", "and", "floordiv", "lshift", "matmul", "mul", "mod", "or", "pow", "rshift",
           "sub", "truediv", "xor"]

INTRINSICS = {
    "truth": operator.truth,
    "not": operator.not_,
    "neg": operator.neg,
    "pos": operator.pos,
    "invert": operator.invert,
    "lt": operator.lt, "le": operator.le, "eq": operator.eq,
    "ne": operator.ne, "gt": operator.gt, "ge": operator.ge,
    "is": _is, "is_not": _is_not,
    "in": _contains, "not_in": _not_contains,
    "getattr": builtins.getattr,
    "getitem": operator.getitem,
    "tuple": _build_tuple,
    "list": _build_list,
    "build_string": _build_string,
    "format_none": _format_none, "format_str": _format_str,
    "format_repr": _format_repr, "format_ascii": _format_ascii,
    "iter": _iter_snapshot,
}
for _name in _BINARY:
    INTRINSICS["binary_" + _name] = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    INTRINSICS["inplace_" + _name] = getattr(operator, "i" + _name)

_INPLACE = {id(INTRINSICS["inplace_" + n]) for n in _BINARY}
_PURE_ALWAYS = {id(f) for f in (_is, _is_not, _build_tuple, _build_list, bound_check)}
_BY_ARGS = {id(f) for k, f in INTRINSICS.items()
            if not k.startswith("inplace_") and k not in ("getattr", "iter")}


def intrinsic(key: str):
    return INTRINSICS[key]


class GlobalLoader:
    """Looks a name up in a function's globals, then builtins (LOAD_GLOBAL)."""

    __slots__ = ("globals", "builtins")

    def __init__(self, globals_: dict):
        self.globals = globals_
        b = globals_.get("__builtins__", builtins)
        self.builtins = b.__dict__ if isinstance(b, types.ModuleType) else b

    def __call__(self, name):
        try:
            return self.globals[name]
        except KeyError:
            pass
        try:
            return self.builtins[name]
        except KeyError:
            raise NameError(f"name '{name}' is not defined") from None


# ---------------------------------------------------------------------------------------------
# Annotations of builtins and of builtin types' methods (the first slice of the library).

_SEQUENTIAL_BUILTINS = {"print", "input", "open", "exec", "eval", "compile", "breakpoint",
                        "setattr", "delattr", "__import__", "next", "iter", "globals", "locals",
                        "vars", "help", "exit", "quit"}
_BUILTIN_CLASS = {}
for _n in dir(builtins):
    _obj = getattr(builtins, _n)
    if callable(_obj) and not (isinstance(_obj, type) and issubclass(_obj, BaseException)):
        _BUILTIN_CLASS[id(_obj)] = SEQUENTIAL if _n in _SEQUENTIAL_BUILTINS else None

# Methods of builtin mutable containers that only read.
_READING_METHODS = {"copy", "count", "index", "get", "keys", "values", "items", "__contains__",
                    "__len__", "__getitem__", "isdisjoint", "issubset", "issuperset", "union",
                    "intersection", "difference", "symmetric_difference", "hex", "decode",
                    "startswith", "endswith", "find", "rfind", "split", "strip"}

_registered: dict[int, tuple[object, int]] = {}


def register(obj, kind: str) -> None:
    """Annotate a callable (that you cannot decorate) with a reordering class."""
    if kind not in _CLASS_BY_NAME:
        raise ValueError(f"kind must be one of {sorted(_CLASS_BY_NAME)} (got {kind!r})")
    _registered[id(obj)] = (obj, _CLASS_BY_NAME[kind])


def _external_spec(f):
    if type(f) is types.FunctionType:
        return f.__dict__.get("__poppy_external__")
    return None


def classify(f, args: tuple, kwnames: tuple) -> int:
    """Reordering class of calling `f(*args)` (the last len(kwnames) args are keywords)."""
    spec = _external_spec(f)
    if spec is not None:
        return _CLASS_BY_NAME[spec.kind]
    fid = id(f)
    reg = _registered.get(fid)
    if reg is not None and reg[0] is f:
        return reg[1]
    if fid in _PURE_ALWAYS or type(f) is GlobalLoader:
        # Global loads are single-assignment reads (PopPy §7): never serialised.
        return UNORDERED
    if fid in _BY_ARGS:
        return _by_mutability(args)
    if fid in _INPLACE:
        left, right = args
        if not _is_builtin_data(left) or not _is_builtin_data(right):
            return SEQUENTIAL
        if not is_immutable(left):
            return SEQUENTIAL
        return UNORDERED if is_immutable(right) else READONLY
    if f is builtins.getattr:
        obj = args[0]
        if _is_builtin_data(obj):
            return UNORDERED  # attribute lookup on builtin types has no hooks to run
        if isinstance(obj, types.ModuleType):
            return READONLY
        return SEQUENTIAL
    if f is _iter_snapshot:
        x = args[0]
        if is_immutable(x):
            return UNORDERED
        if type(x) in _MUTABLE_BUILTINS or type(x) in (type({}.keys()), type({}.values()),
                                                        type({}.items())):
            return READONLY
        return SEQUENTIAL
    if fid in _BUILTIN_CLASS and _BUILTIN_CLASS[fid] is None:
        return _by_mutability(args)
    if type(f) is types.BuiltinMethodType:
        owner = f.__self__
        if owner is builtins:
            return SEQUENTIAL if _BUILTIN_CLASS.get(fid, SEQUENTIAL) == SEQUENTIAL else _by_mutability(args)
        if is_immutable(owner):
            return _by_mutability(args)
        if type(owner) in _MUTABLE_BUILTINS and f.__name__ in _READING_METHODS:
            return READONLY if all(_is_builtin_data(a) for a in args) else SEQUENTIAL
    return SEQUENTIAL


# ---------------------------------------------------------------------------------------------
# Executor: runs async externals on this thread's event loop and blocking ones on worker threads.

_pool: concurrent.futures.ThreadPoolExecutor | None = None


def _thread_pool():
    global _pool
    if _pool is None:
        _pool = concurrent.futures.ThreadPoolExecutor(thread_name_prefix="poppy-blocking")
    return _pool


class Executor:
    """One per λO run. Completions are queued by done-callbacks, which stop the loop so that the
    Rust runtime regains control: no polling."""

    def __init__(self):
        self.loop = get_loop()
        if self.loop.is_running():
            raise RuntimeError("poppy_jit: event loop already running")
        self.done = []
        self.running = {}

    def _finished(self, task_id, fut):
        self.running.pop(task_id, None)
        self.done.append((task_id, fut))
        self.loop.stop()

    def submit_coro(self, task_id, coro):
        task = self.loop.create_task(coro)
        self.running[task_id] = task
        task.add_done_callback(functools.partial(self._finished, task_id))

    def submit_blocking(self, task_id, fn, args, kwargs):
        fut = self.loop.run_in_executor(_thread_pool(), functools.partial(fn, *args, **kwargs))
        self.running[task_id] = fut
        fut.add_done_callback(functools.partial(self._finished, task_id))

    def cancel_all(self):
        """Cancel whatever still runs (the run was aborted) and let the cancellations finish, so
        no task of this run outlives it."""
        pending = list(self.running.values())
        self.running.clear()
        for fut in pending:
            fut.cancel()
        if pending:
            self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.done.clear()

    def wait(self):
        """Block until at least one submitted call finished; return [(task_id, ok, value)]."""
        if not self.done:
            self.loop.run_forever()
        out = []
        for task_id, fut in self.done:
            if fut.cancelled():
                out.append((task_id, False, asyncio.CancelledError()))
                continue
            exc = fut.exception()
            out.append((task_id, True, fut.result()) if exc is None else (task_id, False, exc))
        self.done.clear()
        return out
