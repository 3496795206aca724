"""The annotation library: the reordering class of every external call (PopPy §4.2, §6.1).

`classify(f, args, kwnames) -> 0|1|2` is called by the runtime for each queued external once its
arguments are known (0 unordered, 1 readonly, 2 sequential).  Decorated and registered externals
carry their class; operators, builtins, methods of builtin and immutable types and a set of pure
stdlib functions are classified by the *mutability level* of their arguments at call time:

  level 0  deeply immutable, and every operation on it runs only trusted code   -> unordered
  level 1  trusted code only, but some state read may change (a list, a dict,
           a Decimal's thread context, an ABC's registry)                       -> readonly
  level 2  anything else (a user object whose dunders may do anything)          -> sequential

Anything unknown is sequential: soundness first.  See docs/annotations.md.
"""
from __future__ import annotations

import abc
import builtins
import collections
import dataclasses
import datetime
import decimal
import enum
import fractions
import functools
import itertools
import json
import math
import operator
import os
import re
import reprlib
import sys
import types
import weakref
from typing import Any, Callable, Literal

from ._contract import ATOMS, READONLY, SEQUENTIAL, UNORDERED
from ._regions import Outputs as _RegionOutputs
from ._regions import Region as _Region
from ._contract import CLASS_BY_NAME as _CLASS_BY_NAME
from ._intrinsics import (INTRINSICS, _BINARY, FreshArgs, LazyIter, _split_getitem, _build_tuple, _build_list,
                          _is, _is_not, _iter_snapshot, _next_or_stop, bound_check)

# ---------------------------------------------------------------------------------------------
# Type kinds: how a value of an exact type is checked for its level.  Exact types only: a
# subclass of a builtin may override any dunder, so it is judged like any user class.

(K_ATOM, K_CONTEXT, K_SEQ_IMM, K_SEQ_MUT, K_DICT, K_NAMEDTUPLE, K_DATACLASS, K_PYDANTIC, K_ENUM,
 K_DATETIME, K_MATCH, K_SLICE, K_TYPE, K_CALLABLE, K_MODULE, K_UNTRUSTED) = range(16)

try:  # optional: zoneinfo time zones are immutable and cached
    from zoneinfo import ZoneInfo as _ZoneInfo
except ImportError:  # pragma: no cover
    _ZoneInfo = None

# Level-0 values that are not containers: the runtime's immutable atoms (`_contract.ATOMS`) and
# immutable stdlib values whose operations run only trusted code. Wider than ATOMS because some of
# these compare or hash in Python code (Fraction: fractions.py, which checks the numbers ABCs):
# fine for classifying a call, but not for the runtime's shortcut nor for the dict and set keys
# per-object ordering accepts, which must touch nothing but their container.
_LEVEL0_ATOMS = ATOMS | frozenset({complex, range, type(...), type(NotImplemented), fractions.Fraction,
                                   re.Pattern, datetime.date, datetime.timedelta, datetime.timezone}
                                  | ({_ZoneInfo} if _ZoneInfo else set()))

_TYPE_KIND: dict = {t: K_ATOM for t in _LEVEL0_ATOMS}
_TYPE_KIND.update({
    tuple: K_SEQ_IMM, frozenset: K_SEQ_IMM, _RegionOutputs: K_SEQ_IMM,
    list: K_SEQ_MUT, set: K_SEQ_MUT, bytearray: K_SEQ_MUT, collections.deque: K_SEQ_MUT,
    type({}.keys()): K_SEQ_MUT, type({}.values()): K_SEQ_MUT, type({}.items()): K_SEQ_MUT,
    dict: K_DICT,
    decimal.Decimal: K_CONTEXT,  # arithmetic reads the thread's decimal context
    datetime.datetime: K_DATETIME, datetime.time: K_DATETIME,
    re.Match: K_MATCH, slice: K_SLICE,
    types.ModuleType: K_MODULE,
})
_MUTABLE_CONTAINERS = frozenset({list, set, bytearray, dict, collections.deque})

# Base classes whose own methods are stdlib code that runs no user hooks.
_TRUSTED_BASES = frozenset({object, tuple, int, str, float, bytes, enum.Enum, enum.IntEnum,
                            enum.Flag, enum.IntFlag, getattr(enum, "ReprEnum", object),
                            getattr(enum, "StrEnum", object)})
# Dunders that operators, comparisons, hashing, formatting, iteration and attribute access call;
# a user class defining one of them (other than by a generator we trust) may run anything.
_HOOK_DUNDERS = frozenset(
    "__{}__".format(n) for n in (
        "add radd iadd sub rsub isub mul rmul imul matmul rmatmul imatmul truediv rtruediv "
        "itruediv floordiv rfloordiv ifloordiv mod rmod imod divmod rdivmod pow rpow ipow lshift "
        "rlshift ilshift rshift rrshift irshift and rand iand or ror ior xor rxor ixor neg pos abs "
        "invert eq ne lt le gt ge hash bool len contains getitem iter reversed next str repr "
        "format bytes int float complex index round trunc floor ceil getattr getattribute "
        "class instancecheck subclasscheck missing length_hint fspath").split())


def _generated_files() -> frozenset:
    """Source files of code generators whose methods we trust: dataclasses (its methods are
    compiled from '<string>'), namedtuple, enum and, if installed, pydantic."""
    files = {"<string>", dataclasses.__file__, collections.__file__, enum.__file__}
    return frozenset(os.path.normcase(f) for f in files)


_GENERATED_FILES = _generated_files()
_REPRLIB_FILE = os.path.normcase(reprlib.__file__)


def _pydantic():
    """(BaseModel, package directory) if pydantic is imported — a model instance implies it is;
    never imported by us, so plain programs do not pay for it."""
    mod = sys.modules.get("pydantic")
    if mod is None or not hasattr(mod, "BaseModel"):
        return None, None
    return mod.BaseModel, os.path.normcase(os.path.dirname(mod.__file__)) + os.sep


def _trusted_function(fn) -> bool:
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    code = getattr(fn, "__code__", None)
    if code is None:
        # A builtin function or a slot wrapper: C code, trusted.
        return isinstance(fn, (types.BuiltinFunctionType, types.WrapperDescriptorType,
                               types.MethodDescriptorType))
    fname = os.path.normcase(code.co_filename)
    if fname in _GENERATED_FILES:
        return True
    if fname == _REPRLIB_FILE and code.co_name == "wrapper":
        # reprlib.recursive_repr's wrapper (3.13's dataclasses wrap the generated __repr__ in
        # it): trusted when the function it wraps is.
        inner = getattr(fn, "__wrapped__", None)
        return inner is not None and inner is not fn and _trusted_function(inner)
    pyd_dir = _pydantic()[1]
    return pyd_dir is not None and fname.startswith(pyd_dir)


def _own_hooks_trusted(cls) -> bool:
    """No hook dunder in `cls.__dict__` other than generated ones."""
    for name, value in vars(cls).items():
        if name in _HOOK_DUNDERS and value is not None and not _trusted_function(value):
            return False
    return True


def _mro_trusted(t, extra_bases=frozenset()) -> bool:
    for cls in t.__mro__:
        if cls in _TRUSTED_BASES or cls in extra_bases:
            continue
        if not _own_hooks_trusted(cls):
            return False
    return True


def _is_frozen_dataclass(cls) -> bool:
    params = vars(cls).get("__dataclass_params__")
    return params is not None and params.frozen


def _classify_type(t) -> int:
    """The kind of a user-defined (or unlisted) type, computed once per type."""
    if t in _registered_immutable:
        return K_ATOM
    if issubclass(t, type):
        return K_TYPE
    if isinstance(t, enum.EnumType) and issubclass(t, enum.Enum):
        return K_ENUM if _mro_trusted(t) else K_UNTRUSTED
    if issubclass(t, tuple) and hasattr(t, "_fields"):
        return K_NAMEDTUPLE if _mro_trusted(t) else K_UNTRUSTED
    if dataclasses.is_dataclass(t):
        # Every class but object must be a frozen dataclass: a plain base could hold state.
        if all(c is object or _is_frozen_dataclass(c) for c in t.__mro__) and _mro_trusted(t):
            return K_DATACLASS
        return K_UNTRUSTED
    base_model = _pydantic()[0]
    if base_model is not None and issubclass(t, base_model):
        if t.model_config.get("frozen") and _mro_trusted(t, frozenset(base_model.__mro__)):
            return K_PYDANTIC
        return K_UNTRUSTED
    if t in (types.BuiltinFunctionType, types.BuiltinMethodType, types.FunctionType,
             types.MethodType, types.MethodDescriptorType, types.WrapperDescriptorType,
             types.MethodWrapperType, functools.partial, operator.itemgetter,
             operator.attrgetter) or t in _C_METHOD_TYPES:
        return K_CALLABLE
    return K_UNTRUSTED


def _type_kind(t) -> int:
    k = _TYPE_KIND.get(t)
    if k is None:
        k = _classify_type(t)
        _TYPE_KIND[t] = k
    return k


# ---------------------------------------------------------------------------------------------
# Levels of values.  Deep immutability of large tuples/frozensets is cached by id; the cache
# keeps the object alive, so an id can never be reused while its entry exists, and it is bounded.

_BUDGET = 10_000  # values visited before giving up (-> level 2, always sound)
_CACHE_MIN = 16  # tuples shorter than this are cheaper to re-check than to look up
_CACHE_MAX = 4096
_deep_cache: dict = {}

_ENUM_MEMBER_KEYS = frozenset({"_value_", "_name_", "__objclass__", "_sort_order_"})


def level(x) -> int:
    """0: deeply immutable and hook-free; 1: trusted but reads mutable state; 2: untrusted."""
    t = type(x)
    if t in _LEVEL0_ATOMS:
        return 0
    if (t is tuple or t is frozenset) and len(x) >= _CACHE_MIN:
        hit = _deep_cache.get(id(x))
        if hit is not None and hit[0] is x:
            return hit[1]
        lv = _deep_level(x)
        if len(_deep_cache) >= _CACHE_MAX:
            _deep_cache.clear()
        _deep_cache[id(x)] = (x, lv)
        return lv
    return _deep_level(x)


def _deep_level(root) -> int:
    lv = 0
    stack = [root]
    seen = 0
    while stack:
        x = stack.pop()
        seen += 1
        if seen > _BUDGET:
            return SEQUENTIAL
        t = type(x)
        k = _TYPE_KIND.get(t)
        if k is None:
            k = _type_kind(t)
        if k == K_ATOM:
            continue
        if k == K_SEQ_IMM or k == K_NAMEDTUPLE:
            stack.extend(x)
        elif k == K_SEQ_MUT:
            lv = 1
            stack.extend(x)
        elif k == K_DICT:
            lv = 1
            stack.extend(x.keys())
            stack.extend(x.values())
        elif k == K_CONTEXT or k == K_MODULE:
            lv = 1
        elif k == K_DATETIME:
            tz = x.tzinfo
            if tz is not None and type(tz) not in _LEVEL0_ATOMS:
                return SEQUENTIAL  # a user tzinfo runs Python code on every operation
        elif k == K_MATCH:
            stack.append(x.string)
        elif k == K_SLICE:
            stack.extend((x.start, x.stop, x.step))
        elif k == K_DATACLASS:
            d = getattr(x, "__dict__", None)
            stack.extend(d.values() if d is not None else
                         (object.__getattribute__(x, f.name) for f in dataclasses.fields(x)))
        elif k == K_PYDANTIC:
            if x.__pydantic_private__ or x.__pydantic_extra__:
                return SEQUENTIAL  # private attributes stay assignable on frozen models
            stack.extend(x.__dict__.values())
        elif k == K_ENUM:
            d = x.__dict__
            if not _ENUM_MEMBER_KEYS.issuperset(d):
                return SEQUENTIAL
            stack.append(d["_value_"])
        elif k == K_TYPE:
            lv = max(lv, _type_value_level(x))
            if lv == SEQUENTIAL:
                return lv
        elif k == K_CALLABLE:
            lv = max(lv, callable_class(x))
            if lv == SEQUENTIAL:
                return lv
        else:
            return SEQUENTIAL
    return lv


def _type_value_level(cls) -> int:
    """A class passed as a value: builtin and trusted stdlib types are immutable; ABCs have a
    mutable registry; user classes may be called by the callee (json.dumps(cls=...))."""
    if cls in _TYPE_KIND and _TYPE_KIND[cls] != K_UNTRUSTED:
        return 0
    if cls.__module__ == "builtins" or cls in _TRUSTED_BASES:
        return 0
    if type(cls) is enum.EnumType and _type_kind(cls) == K_ENUM:
        return 0  # iterating an enum class yields its fixed members
    if type(cls) is abc.ABCMeta and cls.__module__ in ("collections.abc", "typing", "numbers"):
        return 1
    return SEQUENTIAL


_SHALLOW_FIXED = frozenset({K_ATOM, K_SEQ_IMM, K_NAMEDTUPLE, K_DATACLASS, K_PYDANTIC, K_ENUM,
                            K_DATETIME, K_MATCH, K_SLICE})


def shallow_level(x) -> int:
    """Level for operations that move elements without calling their methods (len, indexing a
    sequence, iterating, unpacking, copying): a tuple of user objects is 0, a list of them 1.
    A dict's keys may be compared on lookup, so they are checked deeply."""
    t = type(x)
    if t in _LEVEL0_ATOMS:
        return 0
    k = _type_kind(t)
    if k in _SHALLOW_FIXED:
        return 0
    if k == K_SEQ_MUT or k == K_CONTEXT or k == K_MODULE:
        return 1
    if k == K_DICT:
        return max(1, args_class(x.keys()))
    return level(x)


def shallow_class(args) -> int:
    lv = 0
    for a in args:
        la = shallow_level(a)
        if la > lv:
            lv = la
    return lv


def is_immutable(x) -> bool:
    """Deeply immutable, with hook-free operations (level 0)."""
    return level(x) == 0


def args_class(args) -> int:
    lv = 0
    for a in args:
        if type(a) in _LEVEL0_ATOMS:
            continue
        la = level(a)
        if la > lv:
            lv = la
            if lv == SEQUENTIAL:
                break
    return lv


# ---------------------------------------------------------------------------------------------
# Callables: their class when called (also used when a callable is passed to a higher-order
# builtin such as sorted(key=...), map or re.sub, which will call it).

_PURE: set = set()  # ids of callables classified by the level of their arguments
_SEQUENTIAL_IDS: set = set()  # ids of callables explicitly sequential (documentation + speed)
_keep_alive: list = []  # objects whose ids are in the tables above


def _add(table: set, objs) -> None:
    for o in objs:
        table.add(id(o))
        _keep_alive.append(o)


_PURE_BUILTIN_NAMES = (
    "abs all any ascii bin bool bytearray bytes callable chr complex dict dir divmod enumerate "
    "filter float format frozenset hash hex id int iter len list map max min object oct ord pow "
    "range repr reversed round set slice sorted str sum tuple type zip hasattr getattr "
    "isinstance issubclass classmethod staticmethod property").split()
_SEQUENTIAL_BUILTIN_NAMES = (
    "print input open exec eval compile breakpoint setattr delattr __import__ next anext aiter "
    "globals locals vars help exit quit __build_class__").split()
_add(_PURE, (getattr(builtins, n) for n in _PURE_BUILTIN_NAMES))
_add(_SEQUENTIAL_IDS, (getattr(builtins, n) for n in _SEQUENTIAL_BUILTIN_NAMES
                       if hasattr(builtins, n)))


def _module_functions(mod, names=None, exclude=()):
    names = names.split() if isinstance(names, str) else (names or [
        n for n in dir(mod) if not n.startswith("_")])
    return [getattr(mod, n) for n in names if n not in exclude and callable(getattr(mod, n))]


import bisect, cmath, copy, heapq, statistics, string, textwrap, unicodedata, base64  # noqa: E401,E402

_add(_PURE, _module_functions(math))
_add(_PURE, _module_functions(cmath))
_add(_PURE, _module_functions(operator, exclude=(
    "setitem", "delitem", "iadd", "iand", "iconcat", "ifloordiv", "ilshift", "imod", "imul",
    "imatmul", "ior", "ipow", "irshift", "isub", "itruediv", "ixor")))
_add(_PURE, _module_functions(json, "dumps loads"))
_add(_PURE, _module_functions(re, "compile search match fullmatch split findall finditer sub "
                                  "subn escape"))
_add(_PURE, _module_functions(itertools))
_add(_PURE, _module_functions(functools, "partial reduce cmp_to_key"))
_add(_PURE, _module_functions(textwrap, "dedent indent wrap fill shorten"))
_add(_PURE, _module_functions(statistics, "mean fmean median median_low median_high mode "
                                          "multimode stdev pstdev variance pvariance quantiles"))
_add(_PURE, _module_functions(unicodedata))
_add(_PURE, _module_functions(string, "capwords"))
_add(_PURE, _module_functions(base64, "b64encode b64decode urlsafe_b64encode urlsafe_b64decode "
                                      "b16encode b16decode b32encode b32decode"))
_add(_PURE, _module_functions(copy, "copy deepcopy"))
_add(_PURE, _module_functions(bisect, "bisect bisect_left bisect_right"))
_add(_PURE, _module_functions(heapq, "nlargest nsmallest merge"))
# Constructors of immutable stdlib types and their pure alternative constructors.
_add(_PURE, (fractions.Fraction, decimal.Decimal, datetime.date, datetime.time, datetime.datetime,
             datetime.timedelta, datetime.timezone, fractions.Fraction.from_float,
             fractions.Fraction.from_decimal, decimal.Decimal.from_float, dict.fromkeys,
             int.from_bytes, bytes.fromhex, bytearray.fromhex, float.fromhex, str.maketrans,
             bytes.maketrans, datetime.date.fromisoformat, datetime.datetime.fromisoformat,
             datetime.time.fromisoformat, datetime.date.fromordinal, datetime.datetime.combine,
             collections.namedtuple))
# Hidden state, clocks, I/O: sequential (they would be by default; listed to document it).
import logging, random, time  # noqa: E401,E402

_add(_SEQUENTIAL_IDS, _module_functions(random))
_add(_SEQUENTIAL_IDS, _module_functions(time))
_add(_SEQUENTIAL_IDS, _module_functions(logging, "debug info warning error critical exception "
                                                 "log basicConfig getLogger"))
_add(_SEQUENTIAL_IDS, (json.dump, json.load, heapq.heappush, heapq.heappop, heapq.heapify,
                       heapq.heapreplace, heapq.heappushpop, bisect.insort, bisect.insort_left,
                       bisect.insort_right, re.purge, datetime.datetime.now,
                       datetime.datetime.utcnow, datetime.date.today, datetime.datetime.today))

# Methods of builtin mutable containers that only read (everything else of theirs mutates).
_READING_METHODS = frozenset(
    "copy count index get keys values items isdisjoint issubset issuperset union intersection "
    "difference symmetric_difference hex decode startswith endswith find rfind rindex split "
    "rsplit strip lstrip rstrip lower upper title capitalize swapcase isalnum isalpha isascii "
    "isdigit islower isspace istitle isupper join partition rpartition replace splitlines "
    "center ljust rjust zfill expandtabs translate removeprefix removesuffix "
    "__contains__ __len__ __getitem__ __iter__ __reversed__ __eq__ __ne__ __lt__ __le__ "
    "__gt__ __ge__ __or__ __and__ __sub__ __xor__ __add__ __mul__ __repr__ __str__ "
    "__format__ __sizeof__".split())
# Immutable stdlib types with methods that read hidden state or clocks.
_IMPURE_METHODS = {datetime.datetime: frozenset({"now", "utcnow", "today", "timestamp",
                                                 "astimezone", "fromtimestamp",
                                                 "utcfromtimestamp"}),
                   datetime.date: frozenset({"today", "fromtimestamp"})}


# Types of methods implemented in C (re.Pattern.search is a METH_METHOD "builtin_method").
_C_METHOD_TYPES = frozenset({types.BuiltinMethodType, types.MethodDescriptorType,
                             types.MethodWrapperType, types.WrapperDescriptorType,
                             type(re.compile("").search)})


def _method_owner(f):
    """(owner value or None, owner type, method name) of a builtin method or descriptor."""
    self = getattr(f, "__self__", None)
    name = getattr(f, "__name__", "")
    if isinstance(f, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return None, f.__objclass__, name
    return self, type(self), name


def _builtin_method_class(f, args) -> int:
    owner, otype, name = _method_owner(f)
    if owner is builtins or isinstance(owner, types.ModuleType) or owner is None and otype is type(None):
        return SEQUENTIAL  # an unlisted module function (time.time, os.remove, ...)
    if isinstance(owner, type):  # a classmethod of a builtin type (int.from_bytes, ...)
        return SEQUENTIAL
    impure = _IMPURE_METHODS.get(otype)
    if impure is not None and name in impure:
        return SEQUENTIAL
    k = _type_kind(otype)
    if otype in _MUTABLE_CONTAINERS:
        if name not in _READING_METHODS:
            return SEQUENTIAL
        return max(READONLY, args_class(args), 0 if owner is None else level(owner))
    if k in (K_ATOM, K_SEQ_IMM, K_CONTEXT, K_DATETIME, K_MATCH, K_SLICE):
        if owner is None:  # an unbound descriptor: str.upper(s)
            return args_class(args)
        return max(level(owner), args_class(args))
    return SEQUENTIAL


def _python_method_class(f, args) -> int:
    """A bound Python method: trusted when defined by the stdlib on an immutable value (Fraction
    arithmetic, namedtuple._replace, Enum internals)."""
    self, func = f.__self__, f.__func__
    if isinstance(self, type):
        return SEQUENTIAL
    code = getattr(func, "__code__", None)
    if code is None:
        return SEQUENTIAL
    fname = os.path.normcase(code.co_filename)
    trusted_file = fname in _GENERATED_FILES or fname == os.path.normcase(fractions.__file__)
    if not trusted_file or fname == "<string>":
        return SEQUENTIAL
    owner_level = level(self)
    if type(self) in _MUTABLE_CONTAINERS or owner_level == SEQUENTIAL:
        return SEQUENTIAL
    return max(owner_level, args_class(args))


def callable_class(f) -> int:
    """Class of calling `f` with arguments of level 0 (used for callables passed as values)."""
    spec = _external_spec(f)
    if spec is not None:
        return _CLASS_BY_NAME[spec.kind]
    reg = _lookup_registered(f)
    if reg is not None:
        return reg
    fid = id(f)
    if fid in _PURE:
        return UNORDERED
    t = type(f)
    if t is functools.partial:
        return max(callable_class(f.func), args_class(f.args), args_class(f.keywords.values()))
    if t is operator.itemgetter or t is operator.attrgetter:
        return UNORDERED  # applied to values whose own level the callee's arguments carry
    if t is types.MethodType:
        return _python_method_class(f, ())
    if t in _C_METHOD_TYPES:
        if fid in _SEQUENTIAL_IDS:
            return SEQUENTIAL
        return _builtin_method_class(f, ())
    return SEQUENTIAL


# ---------------------------------------------------------------------------------------------
# Registration API (re-exported as poppy_jit.register / poppy_jit.register_immutable).

_registered: dict = {}  # id(obj) -> (obj, class)
_registered_names: dict = {}  # "module.Qual.name" -> class
_registered_immutable: set = set()


def _kind(kind) -> int:
    if kind not in _CLASS_BY_NAME:
        raise ValueError(f"kind must be one of {sorted(_CLASS_BY_NAME)} (got {kind!r})")
    return _CLASS_BY_NAME[kind]


def _resolve(dotted: str):
    """The object a dotted name denotes if its module is already imported, else None (the name
    is then matched against callables' qualified names at call time)."""
    parts = dotted.split(".")
    for i in range(len(parts) - 1, 0, -1):
        mod = sys.modules.get(".".join(parts[:i]))
        if mod is None:
            continue
        obj = mod
        try:
            for p in parts[i:]:
                obj = getattr(obj, p)
        except AttributeError:
            return None
        return obj
    return None


def _unwrap(obj):
    """Functions are registered, not bound methods or class/static method wrappers."""
    if isinstance(obj, (types.MethodType, classmethod, staticmethod)):
        return obj.__func__
    return obj


def register(target: Callable[..., Any] | type | str,
             kind: Literal["unordered", "readonly", "sequential"]) -> None:
    """Annotate a callable you cannot decorate with a reordering class.

    `target` is the object (a function, a method `Client.get`, a builtin, a class) or its dotted
    name ("json.dumps", "mylib.Client.get"); a dotted name whose module is not imported yet is
    matched by qualified name when the runtime meets the callable.  Registering a method
    annotates it on every instance.  `async def` functions need the decorators, because the
    runtime must know to await them.
    """
    cls = _kind(kind)
    if isinstance(target, str):
        if not target or target.startswith(".") or ".." in target:
            raise ValueError(f"not a dotted name: {target!r}")
        _registered_names[target] = cls
        obj = _resolve(target)
        if obj is None:
            return
        target = obj
    obj = _unwrap(target)
    if not callable(obj):
        raise TypeError(f"register() needs a callable or a dotted name, got {type(obj).__name__}")
    import inspect
    if inspect.iscoroutinefunction(obj) or inspect.isasyncgenfunction(obj):
        raise TypeError(f"{getattr(obj, '__qualname__', obj)!r} is async: decorate it with "
                        f"@{kind} instead, so that the runtime awaits it")
    _registered[id(obj)] = (obj, cls)


def register_immutable(cls: type) -> None:
    """Declare that instances of `cls` never change and that its operators and dunders have no
    side effects: operations on them become unordered."""
    if not isinstance(cls, type):
        raise TypeError(f"register_immutable() needs a class, got {type(cls).__name__}")
    _registered_immutable.add(cls)
    _TYPE_KIND[cls] = K_ATOM
    _deep_cache.clear()


def unregister(target: Callable[..., Any] | type | str) -> None:
    """Forget a registration made with `register` (by object or by dotted name)."""
    if isinstance(target, str):
        _registered_names.pop(target, None)
        target = _resolve(target)
        if target is None:
            return
    _registered.pop(id(_unwrap(target)), None)


def _qualified_name(f):
    f = _unwrap(f)
    qual = getattr(f, "__qualname__", None)
    if qual is None:
        return None
    mod = getattr(f, "__module__", None)
    if mod is None:  # a builtin method: str.upper has no module, its type does
        self = getattr(f, "__self__", None)
        mod = type(self).__module__ if self is not None else None
    return f"{mod}.{qual}" if mod else qual


def _lookup_registered(f):
    obj = _unwrap(f)
    reg = _registered.get(id(obj))
    if reg is not None and reg[0] is obj:
        return reg[1]
    if _registered_names:
        name = _qualified_name(f)
        if name is not None:
            return _registered_names.get(name)
    return None


# ---------------------------------------------------------------------------------------------
# classify

def _external_spec(f):
    if type(f) is types.FunctionType:
        return f.__dict__.get("__poppy_external__")
    return None


_INPLACE = frozenset(id(INTRINSICS["inplace_" + n]) for n in _BINARY)
_PURE_ALWAYS = frozenset(id(f) for f in (_is, _is_not, _build_tuple, _build_list, bound_check,
                                         builtins.id, builtins.callable, INTRINSICS["await_call"],
                                         INTRINSICS["match_sequence"], INTRINSICS["match_mapping"],
                                         INTRINSICS["exc_type"], INTRINSICS["exc_traceback"]))
# The runtime's own helpers that read no state of their arguments (`_rt.HELPERS`: a value's type,
# an exit status, a `Caught`): unordered whatever the arguments are. As declared unordered
# externals they would be readonly with a mutable argument (`classify`): in a try body every
# operation whose result is a list or a module would wait for the sequential calls before it.
_ARGUMENTS_UNREAD: set = set()


def declared_unordered(f):
    """The arguments a call of `f` reads beyond its own, when `f` is an external declared
    `@unordered` (its declaration: it depends on nothing but its arguments and changes nothing)
    or a `functools.partial` of one (the partial's stored arguments): a tuple (empty for the
    external itself), else None."""
    extra = ()
    while type(f) is functools.partial:
        extra = extra + f.args + tuple(f.keywords.values())
        f = f.func
    spec = _external_spec(f)
    if spec is None or _CLASS_BY_NAME[spec.kind] != UNORDERED:
        return None
    return extra


def reads_no_argument_state(f):
    """Register a runtime helper of `_ARGUMENTS_UNREAD`; returns it."""
    _ARGUMENTS_UNREAD.add(id(f))
    return f


# The 28 operators and the pure building intrinsics: classified by their arguments' levels.
_SHALLOW_INTRINSICS = ("iter", "iter_private", "unpack_sequence", "unpack_ex", "list_to_tuple", "truth", "not",
                       "get_len")
_BY_ARGS = frozenset(id(f) for k, f in INTRINSICS.items()
                     if not k.startswith("inplace_") and k not in (
                         "is", "is_not", "tuple", "list", "getattr", "getitem", "setattr", "delattr", "setitem", "delitem",
                         "list_extend", "dict_update", "set_update", "match_keys", "match_class",
                         "raise", "raise_from", "with_enter", "with_exit", "exc_type", "exc_traceback",
                         "async_with_enter", "async_with_exit")
                     + _SHALLOW_INTRINSICS)
# `raise` runs user code (instantiating the class) and ends the run: in program order.
_add(_SEQUENTIAL_IDS, (INTRINSICS["raise"], INTRINSICS["raise_from"]))
# Operations that move elements around without calling their methods.
_SHALLOW = frozenset([id(INTRINSICS[k]) for k in _SHALLOW_INTRINSICS] + [
    id(f) for f in (len, list, tuple, enumerate, zip, reversed, iter, bool)])
# Higher-order builtins: a callable argument is judged by callable_class (inside level()).
_TYPE_LIKE_ARG = frozenset({id(isinstance), id(issubclass)})


def _static_lookup(t, name):
    for cls in t.__mro__:
        d = cls.__dict__
        if name in d:
            return cls, d[name]
    return None, None


_PURE_DESCRIPTORS = (types.FunctionType, staticmethod, classmethod, types.MemberDescriptorType,
                     types.GetSetDescriptorType, types.MethodDescriptorType,
                     types.WrapperDescriptorType, types.BuiltinFunctionType,
                     type(collections.namedtuple("_N", "a").a))


_HEAPTYPE = 1 << 9


def _plain_python_lookup(t, name) -> bool:
    """`obj.name` on an instance of `t` runs no user code: every class of `t` but `object` is a
    Python class, none overrides __getattribute__ or defines __getattr__, and what the class
    holds under `name` (if anything) is a function, static/class method, slot or plain value."""
    if not isinstance(t, type) or not isinstance(name, str):
        return False
    if any(c is not object and not (c.__flags__ & _HEAPTYPE) for c in t.__mro__):
        return False
    if t.__getattribute__ is not object.__getattribute__ or _static_lookup(t, "__getattr__")[0]:
        return False
    owner, attr = _static_lookup(t, name)
    return owner is None or isinstance(attr, _PURE_DESCRIPTORS) or not hasattr(type(attr), "__get__")


def _getattr_class(obj, name) -> int:
    """getattr(obj, name): attribute lookup runs descriptors and __getattr__ hooks."""
    t = type(obj)
    if isinstance(obj, types.ModuleType):
        return READONLY  # module attributes may be reassigned by earlier sequential code
    if not isinstance(name, str):
        return SEQUENTIAL
    k = _type_kind(t)
    if k == K_TYPE:
        if type(obj) is not type and type(obj) is not enum.EnumType:
            return SEQUENTIAL
        owner, attr = _static_lookup(obj, name)
        if owner is None or owner in _TYPE_KIND or owner.__module__ == "builtins":
            return READONLY
        return READONLY if (not hasattr(attr, "__get__") or isinstance(
            attr, _PURE_DESCRIPTORS)) else SEQUENTIAL
    lv = level(obj)
    if lv == SEQUENTIAL:
        # An instance of a plain Python class: the lookup reads the instance's __dict__ and
        # binds a method, running no user code unless the class has hooks or a property —
        # a read of the object's state, ordered after the writes before it.
        return READONLY if _plain_python_lookup(t, name) else SEQUENTIAL
    owner, attr = _static_lookup(t, name)
    if owner is not None and owner not in _TRUSTED_BASES and owner not in _TYPE_KIND:
        # A user class's attribute (dataclass, namedtuple, enum): properties run user code.
        if hasattr(attr, "__get__") and not isinstance(attr, _PURE_DESCRIPTORS) \
                and not _trusted_function(getattr(attr, "fget", None)):
            return SEQUENTIAL
    # Lookup on builtin containers only binds a method or reads a fixed slot: no state read.
    return UNORDERED if t in _MUTABLE_CONTAINERS else lv


def _plain_class_attr(t) -> bool:
    """isinstance() falls back to reading x.__class__: plain unless a class overrides it."""
    return t.__getattribute__ is object.__getattribute__ and \
        _static_lookup(t, "__class__")[0] is object


_MATCH_KEYS = INTRINSICS["match_keys"]
_MATCH_CLASS = INTRINSICS["match_class"]


def _match_class_class(subject, cls, names, nargs) -> int:
    """A class pattern: an isinstance check, then attribute look-ups (`__match_args__` for the
    positional sub-patterns)."""
    try:
        if not isinstance(cls, type):
            return SEQUENTIAL  # raises; keep it in order
        c = _isinstance_class(isinstance, subject, cls)
        attrs = list(names)
        if nargs:
            match_args = type.__getattribute__(cls, "__match_args__") if hasattr(cls, "__match_args__") else ()
            if type(match_args) is not tuple:
                return SEQUENTIAL
            attrs += [n for n in match_args[:nargs] if type(n) is str]
        for name in attrs:
            c = max(c, _getattr_class(subject, name))
        return c
    except Exception:  # noqa: BLE001 - any doubt: in program order
        return SEQUENTIAL


def _isinstance_class(f, x, cls) -> int:
    """isinstance/issubclass read no state of `x` except its type; the class side may run a
    metaclass's __instancecheck__/__subclasscheck__."""
    if f is issubclass and not isinstance(x, type):
        return SEQUENTIAL
    t = type(x)
    if t not in _LEVEL0_ATOMS and _type_kind(t) == K_UNTRUSTED and not _plain_class_attr(t):
        return SEQUENTIAL
    lv = UNORDERED
    for c in (cls if type(cls) is tuple else (cls,)):
        meta = type(c)
        if meta is abc.ABCMeta:
            lv = READONLY  # the ABC registry may change
        elif meta is not type and meta is not enum.EnumType:
            return SEQUENTIAL  # a user metaclass's __instancecheck__
    return lv


_WITH_ENTER, _WITH_EXIT = INTRINSICS["with_enter"], INTRINSICS["with_exit"]
_ASYNC_WITH_ENTER, _ASYNC_WITH_EXIT = INTRINSICS["async_with_enter"], INTRINSICS["async_with_exit"]


def _with_lookup_class(mgr, names=("__enter__", "__exit__")) -> int:
    """`with m`'s look-ups of `__enter__`/`__exit__` on the type (`async with`'s of
    `__aenter__`/`__aexit__`): a read of the class (which earlier code may have changed), unless
    what the class holds binds through user code."""
    try:
        for name in names:
            owner, attr = _static_lookup(type(mgr), name)
            if owner is not None and hasattr(type(attr), "__get__") and not isinstance(attr, _PURE_DESCRIPTORS):
                return SEQUENTIAL
        return READONLY
    except Exception:  # noqa: BLE001 - any doubt: in program order
        return SEQUENTIAL


def classify(f, args: tuple, kwnames: tuple) -> int:
    """Reordering class of calling `f(*args)` (the last len(kwnames) args are keywords)."""
    if f is _WITH_ENTER or f is _WITH_EXIT:
        return _with_lookup_class(args[0])
    if f is _ASYNC_WITH_ENTER or f is _ASYNC_WITH_EXIT:
        return _with_lookup_class(args[0], ("__aenter__", "__aexit__"))
    if type(f) is FreshArgs:
        # Fresh displays (built for this operation alone) count by what they hold.
        return classify(f.fn, f.stand_ins(args), kwnames)
    if f is _split_getitem:
        # `s.split(...)[i]` on a str/bytes with atom arguments: a pure operation (the list it
        # builds is seen by nothing else); on anything else, an arbitrary method: sequential.
        if type(args[0]) in (str, bytes) and all(type(a) in _LEVEL0_ATOMS or type(a) is slice for a in args[1:]):
            return UNORDERED
        return SEQUENTIAL
    if f is _MATCH_KEYS:
        # A mapping pattern's look-ups: reads of a builtin dict (like a subscript); any other
        # mapping's `get` is user code.
        if type(args[0]) is dict:
            return max(shallow_level(args[0]), args_class(args[1:]))
        return SEQUENTIAL
    if f is _MATCH_CLASS:
        return _match_class_class(*args)
    if f is _next_or_stop and type(args[0]) is LazyIter and args[0].builtin:
        # One step of a private iterator over builtin containers: reads them, runs no user code.
        return READONLY
    if type(f) is _Region:
        return f.classify(args)
    fid = id(f)
    if fid in _BY_ARGS:
        return args_class(args)
    if fid in _PURE_ALWAYS or fid in _ARGUMENTS_UNREAD or getattr(type(f), "__poppy_unordered_loader__", False):
        # Global loads are single-assignment reads (PopPy §7): never serialised.
        return UNORDERED
    spec = _external_spec(f)
    if spec is not None:
        declared = _CLASS_BY_NAME[spec.kind]
        if declared == UNORDERED:
            # The call may move, but it must see its arguments as they are at its place in
            # program order: with a mutable argument it reads state later calls may change.
            return min(args_class(args), READONLY)
        return declared
    if _registered or _registered_names:
        reg = _lookup_registered(f)
        if reg is not None:
            return reg
    if fid in _INPLACE:
        left, right = args
        if type(left) in _MUTABLE_CONTAINERS:
            return SEQUENTIAL  # mutates the left operand in place
        return args_class(args)
    if f is builtins.getattr or f is builtins.hasattr:
        if len(args) < 2 or kwnames:
            return SEQUENTIAL
        return max(_getattr_class(args[0], args[1]), args_class(args[2:]))
    if fid in _TYPE_LIKE_ARG:
        if len(args) != 2 or kwnames:
            return SEQUENTIAL
        return _isinstance_class(f, *args)
    if fid in _SHALLOW:
        return shallow_class(args)
    if f is operator.getitem:
        return max(shallow_level(args[0]), args_class(args[1:]))
    if fid in _SEQUENTIAL_IDS:
        return SEQUENTIAL
    if fid in _PURE:
        return args_class(args)
    t = type(f)
    if t is types.MethodType:
        return _python_method_class(f, args)
    if t in _C_METHOD_TYPES:
        return _builtin_method_class(f, args)
    if t is functools.partial:
        return max(callable_class(f), args_class(args))
    if isinstance(f, type) and _type_kind(f) == K_NAMEDTUPLE:
        return args_class(args)  # the generated __new__ only builds a tuple
    return SEQUENTIAL
