"""The annotation library: the reordering class of every external call (PopPy §4.2, §6.1).

`classify(f, args, kwnames)` is called by the runtime for each queued external once its arguments
are known. Decorated externals carry their class; builtins, builtin types' methods and intrinsics
are classified by the mutability of their arguments; anything unknown is sequential.
"""
from __future__ import annotations

import builtins
import types

from ._intrinsics import INTRINSICS, _BINARY, _is, _is_not, _build_tuple, _build_list, bound_check
from ._intrinsics import _iter_snapshot

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



_INPLACE = {id(INTRINSICS["inplace_" + n]) for n in _BINARY}
_PURE_ALWAYS = {id(f) for f in (_is, _is_not, _build_tuple, _build_list, bound_check)}
_BY_ARGS = {id(f) for k, f in INTRINSICS.items()
            if not k.startswith("inplace_") and k not in ("getattr", "iter", "setattr", "delattr",
                                                          "setitem", "delitem", "list_extend",
                                                          "dict_update", "set_update")}
# Mutating intrinsics are sequential (they are not in _BY_ARGS and fall through to SEQUENTIAL).

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
    if fid in _PURE_ALWAYS or getattr(type(f), "__poppy_unordered_loader__", False):
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


