"""Runtime support for the Rust λO runtime (src/host/): exit-status helpers of lowering,
cancellation of an aborted run's tasks, and stand-in values for type hints. Intrinsics live in
`_intrinsics`, classification in `_annotations`; the ones the Rust host looks up on this module
are re-exported here.
"""
from __future__ import annotations

import asyncio
import types

from ._annotations import classify, reads_no_argument_state  # noqa: F401 (classify: used by the Rust host)
from ._intrinsics import INTRINSICS, bound_check, intrinsic, intrinsic_fresh  # noqa: F401 (used by the Rust host)
from ._decorators import ExternalSpec, unordered
from . import _declared
from ._loop import take_cancel  # noqa: F401 (used by the Rust host)

# Reads in program order of a global that code can rebind (`load_global`) and of a cell
# (`cell_get`): readonly externals — after every earlier sequential call, never holding up later
# ones. Declared like a decorated external so the host classifies them without calling Python.
for _key in ("load_global", "cell_get"):
    _f = INTRINSICS[_key]
    _f.__poppy_external__ = ExternalSpec("readonly", _f, False, False)
# `import` inside a @poppy function: a sequential external call (it runs module code).
for _key in ("import_name", "import_from"):
    _f = INTRINSICS[_key]
    _f.__poppy_external__ = ExternalSpec("sequential", _f, False, False)
del _key, _f

# Exit-status helpers used by lowering (src/lower.rs): 0 normal, 1 break, 2 continue, 3 return,
# 4 raised (an exception caught in a try body).
HELPERS = {
    "loop_next": unordered(lambda s: 0 if s == 2 else s),
    "loop_exit": unordered(lambda s: 0 if s == 1 else s),
    "loop_again": unordered(lambda s: s == 0 or s == 2),
    "select_return": unordered(lambda s, v: v if s == 3 else None),
}


class Caught:
    """The value of a catching call (`xcall?` in λO) that failed: the exception (its
    `__traceback__` restored) and the source line of the call, where a re-raise places it.
    Made by the Rust host (`Host::caught`); compiled handlers test for it (`is_caught`)."""

    __slots__ = ("exception", "line")

    def __init__(self, exception, line):
        self.exception = exception
        self.line = line

    def __repr__(self):
        return f"<caught {self.exception!r} at line {self.line}>"


HELPERS["is_caught"] = unordered(lambda v: type(v) is Caught)
HELPERS["caught_exception"] = unordered(lambda v: v.exception)

_CANNOT_CATCH = "catching classes that do not inherit from BaseException is not allowed"


def _in_mro(c, t) -> bool:
    return any(m is c for m in type.__getattribute__(t, "__mro__"))


def _exception_class(c) -> bool:
    return isinstance(c, type) and _in_mro(BaseException, c)


def exc_match(exc, cls):
    """`except cls:` for the caught exception `exc` (or the `Caught` holding it), as
    CHECK_EXC_MATCH: `cls` is an exception class or a tuple of them (anything else is the
    TypeError CPython raises); the match is on the class's MRO (PyType_IsSubtype: no
    `__instancecheck__`/`__subclasscheck__` hooks)."""
    if type(exc) is Caught:
        exc = exc.exception
    if isinstance(cls, tuple):
        if not all(_exception_class(c) for c in cls):
            raise TypeError(_CANNOT_CATCH)
        return any(_in_mro(c, type(exc)) for c in cls)
    if not _exception_class(cls):
        raise TypeError(_CANNOT_CATCH)
    return _in_mro(cls, type(exc))


def reraise(exc):
    """An exception no handler matched (or a `Caught` holding it) propagates: fails with that very
    object, its traceback and `__context__` unchanged (`_core._reraise` restores it without a
    `raise` statement). The host places the failure at the line where it was caught."""
    from . import _core

    _core._reraise(exc.exception if type(exc) is Caught else exc)


HELPERS["exc_match"] = unordered(exc_match)
HELPERS["is_raised"] = unordered(lambda s: s == 4)
# None of these reads the state of its arguments (a value's type, an exit status, a `Caught`, an
# exception's type against classes): unordered even when an argument is mutable.
for _h in ("loop_next", "loop_exit", "loop_again", "select_return", "is_caught", "caught_exception",
           "exc_match", "is_raised"):
    reads_no_argument_state(HELPERS[_h])
del _h
# Sequential: it is the run's failure, after everything before it in program order.
reraise.__poppy_external__ = ExternalSpec("sequential", reraise, False, False)
HELPERS["reraise"] = reraise
RERAISE_CODE = reraise.__code__


# ---------------------------------------------------------------------------------------------
# Support for the Rust executor (src/host/): cancellation. Blocking externals run on the
# runtime's own worker threads (src/host/pool.rs).

def cancel_all(loop, pending):
    """Cancel what an aborted run left in flight and let the cancellations finish, so no task of
    the run outlives it. Blocking calls (`_core.BlockingCall`) are only marked cancelled: their
    threads finish the call and the result is dropped."""
    for fut in pending:
        fut.cancel()
    tasks = [f for f in pending if asyncio.isfuture(f)]
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


# ---------------------------------------------------------------------------------------------
# Type hints for results that have not arrived (classification of calls waiting for them).

_INTRINSIC_IDS = {id(f) for f in INTRINSICS.values()}


class _StandIn:
    """A stand-in value (wrapped, since None is a valid stand-in)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def declared_return(spec):
    """(stand-in, declaration, explicit) for an external's declared result type
    (`poppy_jit._declared`): its `returns=` declaration (explicit), else its return annotation
    when that is plain data; None when it declares none. The stand-in is wrapped (`_StandIn`:
    None is a valid stand-in); `_declared.NO` inside it means no stand-in is sound (the
    declaration is still checked at arrival)."""
    import typing

    nf = getattr(spec, "returns", None)
    explicit = nf is not None
    if nf is None:
        try:
            ret = typing.get_type_hints(spec.fn).get("return", NotImplemented)
        except Exception:
            return None
        if ret is NotImplemented:
            return None
        nf = _declared.normalise(ret)
        if nf is None:
            return None
    return _StandIn(_declared.stand_in(nf)), nf, explicit


def check_declared(nf, value, fn, explicit, relied):
    """At arrival: whether the result `value` of external `fn` has its declared type `nf`. A
    mismatch raises a TypeError when the declaration is explicit or when something was ordered
    on the strength of it (`relied`: what, else None); otherwise (a loose return annotation
    nothing relied on) it warns once and returns False: the value is used as it is."""
    if _declared.check(nf, value):
        return True
    if explicit or relied is not None:
        raise _declared.arrival_error(nf, value, fn, relied)
    from . import _warnings

    _warnings.wrong_annotation(fn, _declared.render(nf), _declared._describe(value))
    return False


_ATOM_TYPES = frozenset({str, int, float, bool, bytes, type(None)})
_BUILTIN_METHOD = type("".split)
_GETITEM = INTRINSICS["getitem"]
_GETATTR = INTRINSICS["getattr"]
_SHALLOW_READS = frozenset({id(INTRINSICS[k]) for k in ("truth", "not", "iter", "iter_private", "get_len")}
                           | {id(len), id(bool)})


_TO_STR = frozenset({id(INTRINSICS[k]) for k in ("format_none", "format_str", "format_repr", "format_ascii",
                                                  "convert_str", "convert_repr", "convert_ascii",
                                                  "build_string")} | {id(str), id(repr), id(format)})


def classify_hinted(f, args, kwnames):
    """`classify` of a call some of whose arguments (or whose callee) are stand-ins of declared
    types (`_declared.Typed`, `_declared.Method`): classified on samples of those types, whose
    class is the strictest any value of the type gets."""
    if type(f) is _declared.Method:
        recv = _declared.sample(f.t)
        f = getattr(recv, f.name, None)
        if f is None:
            return 2
    a = _declared.samples(args)
    if a is None:
        return 2
    return classify(f, a, kwnames)


def hint_apply(f, args):
    """The stand-in of the result of `f` on (stand-in) arguments, when it is sure whatever values
    of their types the real arguments are: an operation of the runtime on stand-ins of atoms
    whose result is an atom (atoms are classified alike) or a bound method of one, a str method's
    result (`split` → list[str]), an operation on a declared container. None otherwise."""
    tf = type(f)
    if tf is _declared.Method:
        r = _declared.method_apply(f, args)
        return None if r is None or r[1] is _declared.NO else _StandIn(r[1])
    if any(type(a) is _declared.Typed for a in args):
        r = _declared.typed_apply(f, args, _GETITEM, _GETATTR, INTRINSICS["in"], INTRINSICS["not_in"],
                                  _SHALLOW_READS, _TO_STR)
        return None if r is None or r is _declared.NO else _StandIn(r)
    method = tf is _BUILTIN_METHOD and type(getattr(f, "__self__", None)) in _ATOM_TYPES
    if (id(f) not in _INTRINSIC_IDS and not method) or classify(f, args, ()) != 0:
        return None
    try:
        r = f(*args)
    except Exception:
        return None
    if type(r) in _ATOM_TYPES:
        return _StandIn(r)
    if method:
        s = _declared.str_method_result(f, r)
        return None if s is _declared.NO else _StandIn(s)
    if f is _GETATTR and type(r) is _BUILTIN_METHOD and type(getattr(r, "__self__", None)) in _ATOM_TYPES:
        # `x.split` on a stand-in atom: the bound method of the stand-in (the real one is a
        # builtin method of the real atom: its calls are classified alike).
        return _StandIn(r)
    return None


# ---------------------------------------------------------------------------------------------
# Globals that code of a module can rebind (src/pipeline/globals.rs): a @poppy function reads
# these in program order (`load_global`, readonly), every other global once, eagerly.

import dis as _dis
import functools as _functools

_STORE_GLOBAL = _dis.opmap["STORE_GLOBAL"]
_DELETE_GLOBAL = _dis.opmap["DELETE_GLOBAL"]
_EXTENDED_ARG = _dis.opmap["EXTENDED_ARG"]
# Code naming one of these may rebind any global of its module (conservatively: `setattr` is
# counted whatever its target).
_DYNAMIC_NAMES = frozenset({"globals", "exec", "eval", "vars", "setattr"})
# Per module dict (by id, the dict kept alive): [dict, version, names or None (= every name)];
# and the names the guard found rebound, per module dict (kept across rescans).
_SCANS: dict = {}
_MARKED: dict = {}


class _Everything(Exception):
    pass


def _code_stores(co, out: set, seen: set) -> None:
    """Names STORE_GLOBAL/DELETE_GLOBAL in `co` and the code nested in its constants."""
    if id(co) in seen:
        return
    seen.add(id(co))
    if not _DYNAMIC_NAMES.isdisjoint(co.co_names):
        raise _Everything
    b = co.co_code
    for op in (_STORE_GLOBAL, _DELETE_GLOBAL):
        i = b.find(op)
        while i >= 0:
            if i % 2 == 0:
                arg, j = b[i + 1], i - 2
                shift = 8
                while j >= 0 and b[j] == _EXTENDED_ARG:
                    arg |= b[j + 1] << shift
                    shift += 8
                    j -= 2
                out.add(co.co_names[arg])
            i = b.find(op, i + 1)
    for c in co.co_consts:
        if type(c) is types.CodeType:
            _code_stores(c, out, seen)


def _object_stores(obj, g, out: set, seen: set, depth: int) -> None:
    """Walk what a module global may run: functions of this module (and what they wrap),
    classes' methods and properties, partials, containers of those (two levels deep)."""
    if depth > 4 or id(obj) in seen:
        return
    t = type(obj)
    if t is types.FunctionType:
        seen.add(id(obj))
        if obj.__globals__ is g:
            _code_stores(obj.__code__, out, seen)
        for inner in (obj.__dict__.get("__wrapped__"), getattr(obj.__dict__.get("__poppy_external__"), "fn", None)):
            if inner is not None:
                _object_stores(inner, g, out, seen, depth + 1)
        for cell in obj.__closure__ or ():
            try:
                v = cell.cell_contents
            except ValueError:
                continue
            if callable(v):
                _object_stores(v, g, out, seen, depth + 1)
    elif t in (staticmethod, classmethod, types.MethodType):
        _object_stores(obj.__func__, g, out, seen, depth + 1)
    elif t is property:
        for f in (obj.fget, obj.fset, obj.fdel):
            if f is not None:
                _object_stores(f, g, out, seen, depth + 1)
    elif t is _functools.partial:
        _object_stores(obj.func, g, out, seen, depth + 1)
    elif isinstance(obj, type):
        seen.add(id(obj))
        if obj.__module__ == g.get("__name__"):
            for v in list(obj.__dict__.values()):
                _object_stores(v, g, out, seen, depth + 1)
    elif t in (dict, list, tuple, set, frozenset) and depth < 2:
        seen.add(id(obj))
        for v in list(obj.values() if t is dict else obj):
            _object_stores(v, g, out, seen, depth + 1)
    elif callable(obj):
        inner = getattr(obj, "__wrapped__", None) if not isinstance(obj, types.ModuleType) else None
        if inner is not None:
            _object_stores(inner, g, out, seen, depth + 1)


def rebindable_globals(g: dict, version: int):
    """The global names code of the module whose globals are `g` can rebind (None: any name),
    cached per dict until its version tag (`version`) changes."""
    entry = _SCANS.get(id(g))
    if entry is not None and entry[0] is g and entry[1] == version:
        return entry[2]
    names: set = set()
    try:
        seen: set = set()
        for v in list(g.values()):
            _object_stores(v, g, names, seen, 0)
        result = frozenset(names | _MARKED.get(id(g), (None, set()))[1])
    except _Everything:
        result = None
    _SCANS[id(g)] = [g, version, result]
    return result


def is_marked(g: dict, name: str) -> bool:
    """Whether the guard saw `name` rebound in `g` (a module's globals) behind a run's back."""
    m = _MARKED.get(id(g))
    return m is not None and m[0] is g and name in m[1]


def mark_rebindable(g: dict, name: str) -> None:
    """The guard saw `name` rebound behind the run's back: read it in program order from now on."""
    m = _MARKED.get(id(g))
    if m is None or m[0] is not g:
        m = _MARKED[id(g)] = (g, set())
    m[1].add(name)
    _SCANS.pop(id(g), None)


# ---------------------------------------------------------------------------------------------
# Free variables of a @poppy closure that other code can rebind (src/pipeline/globals.rs): those
# are read through their cell at each use, in program order; the others once, at entry.

_STORE_DEREF = _dis.opmap["STORE_DEREF"]
_DELETE_DEREF = _dis.opmap["DELETE_DEREF"]


def _deref_stores(co, counts: dict) -> None:
    """Count STORE_DEREF/DELETE_DEREF per variable name in `co` (not in nested code)."""
    b = co.co_code
    for op in (_STORE_DEREF, _DELETE_DEREF):
        i = b.find(op)
        while i >= 0:
            if i % 2 == 0:
                arg, j, shift = b[i + 1], i - 2, 8
                while j >= 0 and b[j] == _EXTENDED_ARG:
                    arg |= b[j + 1] << shift
                    shift += 8
                    j -= 2
                name = co._varname_from_oparg(arg)
                counts[name] = counts.get(name, 0) + (1 if op == _STORE_DEREF else 2)
            i = b.find(op, i + 1)


def _enclosing(target, g):
    """The code object whose constants hold `target`, searched from the module's functions."""
    seen: set = set()
    stack = []
    for v in list(g.values()):
        for f in (v, getattr(v, "__func__", None), getattr(v, "__wrapped__", None)):
            if type(f) is types.FunctionType and f.__globals__ is g:
                stack.append(f.__code__)
        if isinstance(v, type) and v.__module__ == g.get("__name__"):
            for m in list(v.__dict__.values()):
                m = getattr(m, "__func__", m)
                if type(m) is types.FunctionType:
                    stack.append(m.__code__)
    while stack:
        co = stack.pop()
        if id(co) in seen:
            continue
        seen.add(id(co))
        for c in co.co_consts:
            if c is target:
                return co
            if type(c) is types.CodeType:
                stack.append(c)
    return None


def written_free_vars(func, code) -> frozenset:
    """The free variables of `func` (compiled from `code`) that code may write while it runs:
    stored more than once by the enclosing function, or stored/deleted by any other code nested
    in it. All of them when the enclosing function is not found."""
    free = code.co_freevars
    if not free:
        return frozenset()
    outer = _enclosing(code, func.__globals__)
    if outer is None:
        return frozenset(free)
    counts: dict = {}
    _deref_stores(outer, counts)
    written = {x for x in free if counts.get(x, 0) > 1}
    stack = [c for c in outer.co_consts if type(c) is types.CodeType and c is not code]
    while stack:
        co = stack.pop()
        inner: dict = {}
        _deref_stores(co, inner)
        written.update(x for x in free if x in inner)
        stack.extend(c for c in co.co_consts if type(c) is types.CodeType)
    return frozenset(written)
