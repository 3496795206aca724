"""Intrinsics: the Python callables that Bezoar's desugared operations lower to.

`INTRINSICS[key]` implements `Intrinsic::key()` (src/bezoar/ir.rs); static operands (attribute
names, unpack counts) come after the register operands. Every intrinsic is an external call whose
reordering class `_annotations.classify` decides from its arguments.
"""
from __future__ import annotations

import builtins
import collections
import functools
import gc
import operator
import sys
import types

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


# A conversion alone (3.13's CONVERT_VALUE, before a computed format spec is evaluated): what
# PyObject_Str/Repr/ASCII return, a str subclass included (the builtins called by their own
# names here, never the module's).
def _convert_str(x):
    return str(x)


def _convert_repr(x):
    return repr(x)


def _convert_ascii(x):
    return ascii(x)


# ---------------------------------------------------------------------------------------------
# Iteration: what a `for` loop runs over (lowering: src/lower/control.rs, `lower_for`).

# Iterables whose items can be read at once without running user code, and which nothing can
# change while the loop runs: the immutable ones. A loop over one is a `fold` over its items.
_MATERIALISE = frozenset({range, tuple, str, bytes, frozenset})
# The builtin containers: reading their items runs no user code, but code the loop body calls
# may change them while the loop runs (a helper appending to a worklist it reaches through a
# global, a dict grown by a callee), so a loop over one is iterated lazily, one `next` in program
# order, as CPython does: a readonly call (after every earlier call that may change the
# container, before every later one), or, over a container the run owns, an operation on that
# container alone (`poppy_jit._objects`: it waits only for the earlier calls that touch it or
# hand it out, so the body's calls still overlap across iterations).
_CONTAINERS = frozenset({list, dict, set, bytearray, collections.deque, type({}.keys()),
                         type({}.values()), type({}.items())})
# The containers per-object ordering knows (an owned object is one of these).
_OWNABLE = (list, dict, set)
# The builtin iterators over immutable iterables.
_IMMUTABLE_ITERATORS = frozenset(type(i) for i in (
    iter(()), iter(range(1)), iter(range(2 ** 70)), iter(""), iter("\xe9"), iter(b"")))
# The builtin iterators over the containers: `next` on one runs no user code and reads only its
# container.
_CONTAINER_ITERATORS = _IMMUTABLE_ITERATORS | frozenset(type(i) for i in (
    iter([]), iter(bytearray()), iter({}), iter({}.values()), iter({}.items()), iter(set()),
    iter(collections.deque()), reversed([]), reversed({}), reversed({}.values()),
    reversed({}.items()), reversed(collections.deque())))
_WRAPPERS = frozenset({enumerate, zip})


def _wrapper_sources(x):
    """The iterators an enumerate/zip object reads, as its __reduce__ names them, or None for a
    strict zip (it may raise midway: judged like any iterator)."""
    r = x.__reduce__()
    if type(x) is zip:
        return r[1] if len(r) == 2 else None
    return (r[1][0],)  # enumerate


def _max_refs(srcs) -> int:
    return max((sys.getrefcount(i) for i in srcs), default=0)


def _private(x, srcs) -> bool:
    """Whether the iterators `srcs` an enumerate/zip object `x` reads are its own (made by it
    from an iterable, as in `enumerate(xs)`), not also held by the program (`enumerate(it)`,
    whose other `next` calls the loop must not pass): their reference counts are those of a
    fresh wrapper's (`_PRIVATE_REFS`, measured the same way)."""
    return _max_refs(srcs) <= _PRIVATE_REFS[type(x)]


_PRIVATE_REFS = {enumerate: (lambda w: _max_refs(_wrapper_sources(w)))(enumerate([])),
                 zip: (lambda w: _max_refs(_wrapper_sources(w)))(zip([], ()))}


def _container_of(it):
    """The list, dict or set a builtin container iterator reads (a dict view's or reversed
    iterator's dict too), or None (an iterator over an immutable sequence, a bytearray, a
    deque: per-object ordering does not know those)."""
    if type(it) in _IMMUTABLE_ITERATORS:
        return None
    for o in gc.get_referents(it):
        if type(o) in _OWNABLE:
            return o
    return None


class LazyIter:
    """The iterator of a `for` loop that is iterated lazily (`_next_or_stop`, one item per
    iteration, in program order). Falsy, so that lowering's `ite` on the loop's iterable picks
    the lazy loop for it and the `fold` for a non-empty tuple. It defines hook dunders, so the
    annotation library judges it untrusted: `_next_or_stop` on it is sequential (it runs user
    code, e.g. a generator's body) — unless `builtin` is set: a private iterator over builtin
    containers only, whose `next` runs no user code and only reads them (readonly: after every
    earlier call that may change them, before every later one). `src` is the one list, dict or
    set such an iterator reads when there is exactly one (else None): `next` is then an
    operation on it alone, ordered per object when the run owns it (`poppy_jit._objects`)."""

    __slots__ = ("it", "builtin", "src")

    def __init__(self, it, builtin=False, src=None):
        self.it = it
        self.builtin = builtin
        self.src = src

    def __bool__(self):
        return False

    def __iter__(self):
        return self.it

    def __repr__(self):
        return f"<poppy_jit lazy iterator over {self.it!r}>"


def _lazy_over_containers(it, srcs):
    """A builtin LazyIter over the container iterators `srcs` (those `it` reads)."""
    found = [c for c in map(_container_of, srcs) if c is not None]
    return LazyIter(it, True, found[0] if len(found) == 1 else None)


def _iter_snapshot(x):
    """`GET_ITER` of a `for` loop: a tuple of the items for an immutable iterable (range, tuple,
    str, bytes, frozenset, reversed() of one, enumerate/zip made from such), which nothing can
    change while the loop runs; a lazy iterator otherwise: over a builtin container (or
    enumerate/zip/reversed over containers) a builtin one, whose steps only read them; over
    anything else (generators, iterators, files, map/filter, custom `__iter__`) one whose steps
    run user code."""
    t = type(x)
    if t in _MATERIALISE:
        return tuple(x)
    if t in _CONTAINERS:
        it = iter(x)
        return _lazy_over_containers(it, (it,))
    if t is reversed:  # reversed() of a sequence without __reversed__
        if type(x.__reduce__()[1][0]) in _MATERIALISE:
            return tuple(x)
    elif t in _WRAPPERS:
        srcs = _wrapper_sources(x)
        if srcs is not None and _private(x, srcs):
            if all(type(i) in _IMMUTABLE_ITERATORS for i in srcs):
                return tuple(x)
            if all(type(i) in _CONTAINER_ITERATORS for i in srcs):
                return _lazy_over_containers(iter(x), srcs)
    return LazyIter(iter(x))


def _iter_private(x):
    """`GET_ITER` of a `for` loop whose body cannot hand the container on
    (bezoar::passes::private_iterables): `_iter_snapshot`'s result — unless the run owns the
    container and has handed it to nobody, when the runtime calls `_iter_fold` instead (see
    `Host::local_variant`): nothing can then change it while the loop runs."""
    return _iter_snapshot(x)


def _iter_fold(x):
    """`_iter_private` on a list, dict or set that nothing but the loop's own reads can reach
    while the loop runs: its items at once (the loop is a `fold`)."""
    if type(x) in _OWNABLE:
        return tuple(x)
    return _iter_snapshot(x)


def _next_or_stop(it):
    """One step of a lazy `for` loop: `(item,)`, or `()` once the iterator is exhausted
    (StopIteration is the end of the loop, not an error). Given an empty tuple (an empty
    materialised iterable is falsy too, so it reaches the lazy loop), `()` at once: the empty
    tuple is an immutable argument, so that call is unordered."""
    if type(it) is tuple:
        return ()
    try:
        return (next(it.it),)
    except StopIteration:
        return ()


def _split_getitem(obj, *rest):
    """`obj.<method>(args...)[index]` (operands: obj, args..., index, method name)."""
    *args, index, method = rest
    return getattr(obj, method)(*args)[index]


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
    "convert_str": _convert_str, "convert_repr": _convert_repr, "convert_ascii": _convert_ascii,
    "iter": _iter_snapshot,
    "iter_private": _iter_private,
    "next_or_stop": _next_or_stop,
}
for _name in _BINARY:
    INTRINSICS["binary_" + _name] = getattr(operator, _name + "_" if _name in ("and", "or") else _name)
    INTRINSICS["inplace_" + _name] = getattr(operator, "i" + _name)





def _setattr(obj, value, name):
    setattr(obj, name, value)


def _delattr(obj, name):
    delattr(obj, name)


def _setitem(obj, key, value):
    obj[key] = value


def _delitem(obj, key):
    del obj[key]


def _build_map(*kv):
    return {kv[i]: kv[i + 1] for i in range(0, len(kv), 2)}


def _build_set(*xs):
    return set(xs)


def _build_slice(*xs):
    return slice(*xs)


def _list_extend(lst, it):
    # `[*it]` (LIST_EXTEND) words a non-iterable differently from list.extend.
    # (Errors are raised outside `except` blocks: inside one the new error's `__context__` would
    # be the error just caught, where CPython's is the exception being handled, if any.)
    try:
        items = iter(it)
    except TypeError:
        items = None
    if items is None:
        raise TypeError(f"Value after * must be an iterable, not {type(it).__name__}")
    lst.extend(items)


def _dict_update(d, m):
    # `{**m}` (DICT_UPDATE) needs a mapping; dict.update would also take an iterable of pairs.
    if not hasattr(type(m), "keys"):
        raise TypeError(f"'{type(m).__name__}' object is not a mapping")
    d.update(m)


def _set_update(s, it):
    s.update(it)


def _list_to_tuple(lst):
    return tuple(lst)


def _unpack_iter(x):
    try:
        return iter(x)
    except TypeError:
        pass
    raise TypeError(f"cannot unpack non-iterable {type(x).__name__} object")


def _unpack_sequence(x, n):
    # Like UNPACK_SEQUENCE: take at most n + 1 items (an endless iterator fails, not hangs).
    items = []
    for item in _unpack_iter(x):
        if len(items) == n:
            raise ValueError(f"too many values to unpack (expected {n})")
        items.append(item)
    if len(items) < n:
        raise ValueError(f"not enough values to unpack (expected {n}, got {len(items)})")
    return tuple(items)


def _unpack_ex(x, before, after):
    items = list(_unpack_iter(x))
    if len(items) < before + after:
        raise ValueError(f"not enough values to unpack (expected at least {before + after}, "
                         f"got {len(items)})")
    return (*items[:before], items[before:len(items) - after], *items[len(items) - after:])


def _is_consumer(f, name):
    """Whether `f` is the builtin a generator expression was compiled for (`builtins.<name>`, or
    the `join` method of a str/bytes/bytearray), so it may be inlined as a loop."""
    if name == "join":
        return (isinstance(f, types.BuiltinMethodType) and f.__name__ == "join"
                and type(getattr(f, "__self__", None)) in (str, bytes, bytearray))
    return f is getattr(builtins, name, None)


def _consumer_mismatch(f, name):
    raise TypeError(
        f"poppy_jit: a generator expression over local variables is passed to {f!r}, which is not "
        f"builtins.{name}; it was compiled assuming that builtin (run this function without "
        "PYTHONPOPPY=1)")


def _make_genexpr(code, globals, items, *cells):
    """The generator object CPython would pass (its code runs in CPython when it is consumed),
    its closure the cells of the variables it captures."""
    return types.FunctionType(code, globals, closure=cells or None)(iter(items))


def _make_cell(*v):
    return types.CellType(*v)


def _cell_get(cell, name, free):
    try:
        return cell.cell_contents
    except ValueError:
        pass
    if free:
        raise NameError(f"cannot access free variable '{name}' where it is not associated with a "
                        "value in enclosing scope", name=name)
    raise UnboundLocalError(f"cannot access local variable '{name}' where it is not associated "
                            "with a value")


def _cell_set(cell, value):
    cell.cell_contents = value


def _make_function(code, globals, defaults, kwdefaults, annotations, closure):
    """MAKE_FUNCTION: a real function object (with real cells) for an inner function or lambda."""
    f = types.FunctionType(code, globals, None, defaults, closure)
    if kwdefaults is not None:
        f.__kwdefaults__ = kwdefaults
    if annotations is not None:
        f.__annotations__ = dict(zip(annotations[::2], annotations[1::2]))
    return f


def _function_str(f):
    """How CPython names a callee in call errors (_PyObject_FunctionStr)."""
    qualname = getattr(f, "__qualname__", None)
    if not isinstance(qualname, str):
        return f"{type(f).__name__} object"
    module = getattr(f, "__module__", None)
    if isinstance(module, str) and module != "builtins":
        return f"{module}.{qualname}()"
    return f"{qualname}()"


class _StarCall:
    """`f(*args, **kwargs)` as a callable of no arguments: the external call itself is made (in
    program order: the runtime does not know this callable, so the call is sequential) when the
    evaluator calls it."""
    __slots__ = ("f", "args", "kwargs")

    def __init__(self, f, args, kwargs):
        self.f, self.args, self.kwargs = f, args, kwargs

    def __call__(self):
        return self.f(*self.args, **self.kwargs)

    def __repr__(self):
        return f"<star call of {self.f!r}>"


def _star_call(f, args, kwargs=None):
    if type(args) is not tuple:
        try:
            args = tuple(args)
        except TypeError:
            if hasattr(args, "__iter__"):
                raise
            bad = True
        else:
            bad = False
        if bad:
            raise TypeError(f"{_function_str(f)} argument after * must be an iterable, "
                            f"not {type(args).__name__}")
    return _StarCall(f, args, {} if kwargs is None else kwargs)


def _dict_merge(d, m, f):
    if not hasattr(type(m), "keys"):
        raise TypeError(f"{_function_str(f)} argument after ** must be a mapping, "
                        f"not {type(m).__name__}")
    for k in m.keys():
        if k in d:
            raise TypeError(f"{_function_str(f)} got multiple values for keyword argument '{k}'")
        d[k] = m[k]


def _load_global(g, name):
    try:
        return g[name]
    except KeyError:
        pass
    b = g.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else b.__dict__
    try:
        return b[name]
    except KeyError:
        pass
    raise NameError(f"name '{name}' is not defined", name=name)


def _import_name(g, fromlist, level, name):
    """`IMPORT_NAME`: what CPython 3.11 does for it in a function's frame — look `__import__` up
    in the frame's builtins (the function's globals' `__builtins__`) and call it with the
    function's globals and no locals."""
    b = g.get("__builtins__", builtins)
    b = b if isinstance(b, dict) else b.__dict__
    f = b.get("__import__")
    if f is None and "__import__" not in b:
        raise ImportError("__import__ not found")
    return f(name, g, None, fromlist, level)


_IMPORT_FROM_CODE = {}


def _import_from(module, name):
    """`IMPORT_FROM`: runs CPython's own instruction (attribute, else the submodule from
    sys.modules, else its ImportError with name, path and message) in a two-instruction code
    object, made once per name from `lambda m: m.NAME` with LOAD_ATTR (and its inline caches)
    replaced by IMPORT_FROM (and NOPs): the same length, so the line table still fits."""
    code = _IMPORT_FROM_CODE.get(name)
    if code is None:
        import dis
        base = (lambda m: m.x).__code__.replace(co_names=(name,))
        raw = bytearray(base.co_code)
        at = raw.index(dis.opmap["LOAD_ATTR"])
        raw[at] = dis.opmap["IMPORT_FROM"]
        for i in range(at + 2, len(raw) - 2, 2):
            raw[i], raw[i + 1] = dis.opmap["NOP"], 0
        code = _IMPORT_FROM_CODE[name] = types.FunctionType(
            base.replace(co_code=bytes(raw), co_name="<import_from>"), {})
    return code(module)


def _raise(exc):
    """`raise exc` of compiled code (RAISE_VARARGS 1): CPython's own statement, so a class is
    instantiated, a non-exception is its TypeError and `__context__` is the exception being
    handled. `_traceback.place` puts the @poppy frame's entry at the raise in place of this one."""
    raise exc


def _raise_from(exc, cause):
    """`raise exc from cause` (RAISE_VARARGS 2; `from None` suppresses the context)."""
    raise exc from cause


def _assertion_error():
    """`LOAD_ASSERTION_ERROR`: the builtin, whatever the function's globals say."""
    return AssertionError


RAISES = (_raise.__code__, _raise_from.__code__)


# `with` statements (src/lift/with_stmt.rs): BEFORE_WITH's look-ups and what WITH_EXCEPT_START
# passes to `__exit__`.

_type_dict = type.__dict__["__dict__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_type_name = type.__dict__["__name__"].__get__
_MISSING = object()


def _lookup_type(t, name):
    """CPython's `_PyType_Lookup`: `name` in the dicts of the type's MRO, without descriptors."""
    for klass in _type_mro(t):
        d = _type_dict(klass)
        if name in d:
            return d[name]
    return _MISSING


def _lookup_special(obj, name):
    """CPython's `_PyObject_LookupSpecial`: the type's attribute, bound through its type's
    `__get__` (if any) to `obj`; `_MISSING` when the type has none."""
    t = type(obj)
    attr = _lookup_type(t, name)
    if attr is _MISSING:
        return attr
    get = _lookup_type(type(attr), "__get__")
    return attr if get is _MISSING else get(attr, obj, t)


_FORMAT_ERROR = ("unsupported format string passed to ", ".__format__")


def _tp_name(obj):
    """The `tp_name` of obj's type as CPython's messages print it (`%.200s`), which Python code
    cannot read: `object.__format__` with a format spec fails with it in its message, running no
    code of the object's."""
    try:
        object.__format__(obj, "x")
    except TypeError as e:
        msg = str(e)
        head, tail = _FORMAT_ERROR
        if msg.startswith(head) and msg.endswith(tail):
            return msg[len(head):-len(tail)]
    return _type_name(type(obj))


def _with_enter(mgr):
    """BEFORE_WITH, first half: the manager's `__enter__`, bound, or CPython's TypeError."""
    enter = _lookup_special(mgr, "__enter__")
    if enter is _MISSING:
        raise TypeError(f"'{_tp_name(mgr)}' object does not support the context manager protocol")
    return enter


def _with_exit(mgr):
    """BEFORE_WITH, second half: the manager's `__exit__`, bound, or CPython's TypeError."""
    exit = _lookup_special(mgr, "__exit__")
    if exit is _MISSING:
        raise TypeError(f"'{_tp_name(mgr)}' object does not support the context manager protocol "
                        "(missed __exit__ method)")
    return exit


_exc_traceback = BaseException.__dict__["__traceback__"].__get__


def _exc_type(e):
    """WITH_EXCEPT_START's first argument: the exception's type."""
    return type(e)


def _exc_tb(e):
    """WITH_EXCEPT_START's third argument: the exception's traceback (the C field, whatever a
    subclass makes of the attribute)."""
    return _exc_traceback(e)

INTRINSICS.update({
    "raise": _raise, "raise_from": _raise_from, "assertion_error": _assertion_error,
    "import_name": _import_name, "import_from": _import_from,
    "star_call": _star_call, "dict_merge": _dict_merge, "load_global": _load_global,
    "make_cell": _make_cell, "cell_get": _cell_get, "cell_set": _cell_set,
    "make_function": _make_function,
    "is_consumer": _is_consumer, "consumer_mismatch": _consumer_mismatch,
    "make_genexpr": _make_genexpr,
    "setattr": _setattr, "delattr": _delattr, "setitem": _setitem, "delitem": _delitem,
    "build_map": _build_map, "build_set": _build_set, "build_slice": _build_slice,
    "list_extend": _list_extend, "dict_update": _dict_update, "set_update": _set_update,
    "list_to_tuple": _list_to_tuple, "unpack_sequence": _unpack_sequence, "unpack_ex": _unpack_ex,
    "split_getitem": _split_getitem,
    "with_enter": _with_enter, "with_exit": _with_exit, "exc_type": _exc_type, "exc_traceback": _exc_tb,
})


def intrinsic(key: str):
    return INTRINSICS[key]


class FreshArgs:
    """An intrinsic some of whose operands (bit mask `fresh`) are fresh displays — a list, set or
    dict built for this operation alone (`x in [a, b]`, `cache |= {state}`). Calls forward to the
    intrinsic; the annotation library classifies a call by the fresh operands' items instead of
    as reads of mutable objects (nothing else can refer to them while the operation runs)."""

    __slots__ = ("fn", "fresh", "__weakref__")

    def __init__(self, fn, fresh: int):
        self.fn = fn
        self.fresh = fresh

    def __call__(self, *args):
        return self.fn(*args)

    def stand_ins(self, args):
        """The arguments with each fresh display replaced by a tuple of what it holds."""
        out = list(args)
        for i, a in enumerate(args):
            if self.fresh >> i & 1 and type(a) in (list, set, dict):
                out[i] = tuple(a.items()) if type(a) is dict else tuple(a)
        return tuple(out)

    def __repr__(self):
        return f"<fresh-operand {getattr(self.fn, '__name__', self.fn)!r} {self.fresh:#b}>"


_fresh_cache: dict = {}


def intrinsic_fresh(key: str, fresh: int):
    f = _fresh_cache.get((key, fresh))
    if f is None:
        f = _fresh_cache[(key, fresh)] = FreshArgs(INTRINSICS[key], fresh)
    return f


# `await` in a compiled `async def` (src/lift/awaits.rs).
from ._awaits import await_call_of as _await_call_of, await_value as _await_value  # noqa: E402

INTRINSICS.update({"await": _await_value, "await_call": _await_call_of})

from ._awaits import aenter_awaited as _aenter_awaited, aexit_awaited as _aexit_awaited  # noqa: E402


def _async_with_enter(mgr):
    """BEFORE_ASYNC_WITH, first half: a callable awaiting the manager's `__aenter__()` (one
    sequential external), or CPython's TypeError."""
    enter = _lookup_special(mgr, "__aenter__")
    if enter is _MISSING:
        raise TypeError(f"'{_tp_name(mgr)}' object does not support the asynchronous context manager protocol")
    return functools.partial(_aenter_awaited, enter)


def _async_with_exit(mgr):
    """BEFORE_ASYNC_WITH, second half: a callable awaiting the manager's `__aexit__(…)`, or
    CPython's TypeError."""
    exit = _lookup_special(mgr, "__aexit__")
    if exit is _MISSING:
        raise TypeError(f"'{_tp_name(mgr)}' object does not support the asynchronous context manager protocol "
                        "(missed __aexit__ method)")
    return functools.partial(_aexit_awaited, exit)


INTRINSICS.update({"async_with_enter": _async_with_enter, "async_with_exit": _async_with_exit})

# `match` statements (src/lift/patterns.rs).
from ._patterns import get_len as _get_len, match_class as _match_class, match_keys as _match_keys  # noqa: E402
from ._patterns import match_mapping as _match_mapping, match_sequence as _match_sequence  # noqa: E402

INTRINSICS.update({"match_sequence": _match_sequence, "match_mapping": _match_mapping, "get_len": _get_len,
                   "match_keys": _match_keys, "match_class": _match_class})
