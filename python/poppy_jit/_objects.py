"""Per-object ordering: which calls make fresh containers and which touch only one container.

The runtime orders operations on a list, dict or set *it created itself* (a display, `list(...)`,
a comprehension) against the other operations on that object only — not against every earlier
sequential call — as long as the object has not escaped (been given to any other call). See
`ObjInfo` in src/lambda_o/eval.rs. This module is the Python side: `MAKERS` and `scope`.

`scope(f, args, kwnames)` is `(receiver, writes, other_args, part, recheck)` (`writes` None:
touches no state; `part`: the hash of the one dict/set key it touches, None: the whole receiver;
`recheck`: holds only while the receiver's contents do) when calling
`f` touches nothing but
`receiver` (an exact list/dict/set) — no user code can run (keys are immutable atoms in a
container whose keys all are, indices are ints), nothing else is read — else None. Values it stores
(`append(x)`) are in `other_args`, so an owned object stored into another escapes.
"""
from __future__ import annotations

import builtins
import gc
import json
import operator

from ._contract import ATOMS
from ._regions import Region as _Region
from ._intrinsics import FreshArgs, LazyIter, _build_list, _build_map, _build_set, _contains, \
    _iter_private, _iter_snapshot, _list_extend, _next_or_stop, _not_contains, _setitem

# Calls whose result is a new list/dict/set nobody else has seen.
MAKERS = frozenset(id(f) for f in (_build_list, _build_map, _build_set, list, dict, set, sorted))
# The same, but only when called with positional arguments alone: `json.loads(s)` builds every
# list and dict it returns (its `object_hook=`, `object_pairs_hook=` or `cls=` could return an
# object someone else holds). A parsed reply subscripted in a try body is then an operation on
# the run's own dict, not a read ordered behind every earlier sequential call.
MAKERS_WITHOUT_KEYWORDS = frozenset(id(f) for f in (json.loads,))
FRESH_ARGS = FreshArgs

_STR_SPLITS = frozenset(("split", "rsplit", "splitlines"))

# Builtin iterators and iterator wrappers that hold a container (`enumerate(lst)`, `iter(d)`):
# handing one on hands the container on (`held`; the runtime's key collection asks it).
HOLDER_TYPES = frozenset(type(x) for x in (
    enumerate([]), reversed([]), iter([]), iter({}), iter({}.values()), iter({}.items()),
    iter(set()), reversed({}), reversed({}.values()), reversed({}.items())))


def held(o) -> tuple:
    """The lists, dicts and sets a holder (`HOLDER_TYPES`) reaches, directly or through the
    iterators it wraps."""
    out, todo, seen = [], [o], 0
    while todo and seen < 16:
        x = todo.pop()
        seen += 1
        for r in gc.get_referents(x):
            t = type(r)
            if t in (list, dict, set):
                out.append(r)
            elif t in HOLDER_TYPES or t is tuple:
                todo.append(r)
    return tuple(out)


def maker(f) -> bool:
    """A bound method that returns a new list nobody else holds (`s.split(...)`); the plain
    makers are matched by identity (MAKERS) before this is asked."""
    return type(f) is _BUILTIN_METHOD and type(f.__self__) in (str, bytes) and f.__name__ in _STR_SPLITS

_CONTAINERS = (list, dict, set)
_BUILTIN_METHOD = type([].append)


def _atom(x) -> bool:
    return type(x) in ATOMS


def _index(x) -> bool:
    t = type(x)
    return t is int or t is bool or (t is slice and all(type(v) in (int, type(None))
                                                      for v in (x.start, x.stop, x.step)))


def owned_ok(o) -> bool:
    """Whether a fresh container may be owned: a dict or set only while every key is an atom (a
    lookup with an atom key then compares atoms only; scoped operations only add atom keys)."""
    return type(o) is list or all(type(x) in ATOMS for x in o)


def scope(f, args: tuple, kwnames: tuple):
    """`(receiver, writes, other_args, part, recheck)` or None (module doc); `part` is the hash
    of the dict's or set's key the call touches alone (an atom: hashing it runs no user code;
    equal keys hash equal), None when it touches the whole receiver; `recheck`: the answer holds
    only while the receiver's contents do (`x in lst`), so the runtime asks again when the call
    is about to run (`Scope::recheck`)."""
    r = _scope(f, args, kwnames)
    if r is None or len(r) == 5:
        return r
    if len(r) == 4:
        return r + (False,)
    return r + (None, False)


def _atoms_only(lst: list) -> bool:
    """Whether every item of `lst` is an atom other than bytes: comparing one with an atom
    (`==`, as `in` does) then runs no user code. (bytes compared with str or int can warn under
    `python -b`, and a warning can run user code: left out.)"""
    for x in lst:
        t = type(x)
        if t not in ATOMS or t is bytes:
            return False
    return True


def _keyed(recv, write, rest, key):
    return recv, write, rest, hash(key)


def _scope(f, args: tuple, kwnames: tuple):
    if kwnames:
        return None
    if type(f) is FreshArgs:
        f = f.fn
    if type(f) is _Region:
        return f.scope(args)
    n = len(args)
    if type(f) is _BUILTIN_METHOD and type(f.__self__) in (list, dict, set, str):
        recv = f.__self__
        t = type(recv)
        name = f.__name__
        if t is list:
            if name == "append" and n == 1:
                return recv, True, args
            if name == "insert" and n == 2 and type(args[0]) is int:
                return recv, True, args[1:]
            if name == "pop" and (n == 0 or (n == 1 and type(args[0]) is int)):
                return recv, True, ()
            if name in ("clear", "reverse") and n == 0:
                return recv, True, ()
            if name == "extend" and n == 1 and type(args[0]) in (list, tuple) and args[0] is not recv:
                # Iterating a builtin list or tuple runs no user code; its items are only stored
                # (an owned object among them escaped when it was stored there).
                return recv, True, args
        elif t is dict:
            if name == "get" and n in (1, 2) and _atom(args[0]):
                return _keyed(recv, False, args[1:], args[0])
            if name == "pop" and n in (1, 2) and _atom(args[0]):
                return _keyed(recv, True, args[1:], args[0])
            if name == "setdefault" and n in (1, 2) and _atom(args[0]):
                return _keyed(recv, True, args[1:], args[0])
        elif t is set:
            if name in ("add", "discard", "remove") and n == 1 and _atom(args[0]):
                return _keyed(recv, True, (), args[0])
        elif t is str and name == "join" and n == 1 and type(args[0]) is list:
            # str.join reads str items directly and raises on anything else: no user code.
            return args[0], False, ()
        return None
    if f is builtins.getattr and n == 2 and type(args[0]) in _CONTAINERS and type(args[1]) is str:
        # A builtin container's attributes are its type's: reading one touches no state (the
        # bound method it returns stands for the container wherever it goes).
        return args[0], None, ()
    if f is operator.getitem and n == 2:
        o, k = args
        if type(o) is list and _index(k):
            return o, False, ()
        if type(o) is dict and _atom(k):
            return _keyed(o, False, (), k)
        return None
    if f is _setitem and n == 3:
        o, k, v = args
        if type(o) is list and type(k) is int:
            return o, True, (v,)
        if type(o) is dict and _atom(k):
            return _keyed(o, True, (v,), k)
        return None
    if f is _list_extend and n == 2 and type(args[0]) is list and type(args[1]) is tuple:
        # A comprehension's append (`LIST_APPEND` is `_list_extend(lst, (x,))`) or `[a, *t]`
        # with a tuple: iterating a tuple runs no user code; the items are only stored.
        return args[0], True, args[1:]
    if (f is _iter_snapshot or f is _iter_private or f is builtins.len) and n == 1 and \
            type(args[0]) in _CONTAINERS:
        return args[0], False, ()
    if (f is _iter_snapshot or f is _iter_private) and n == 1 and type(args[0]) in HOLDER_TYPES:
        # `for i, x in enumerate(lst)`: reads the one container the wrapper holds
        h = held(args[0])
        return (h[0], False, ()) if len(h) == 1 else None
    if f is builtins.enumerate and n == 1 and type(args[0]) in _CONTAINERS:
        # The wrapper reads nothing yet; it holds the container (a holder: handing it on hands
        # the container on).
        return args[0], False, ()
    if f is _next_or_stop and n == 1 and type(args[0]) is LazyIter and args[0].builtin and \
            type(args[0].src) in _CONTAINERS:
        # One step of a `for` loop over one builtin container: reads it, runs no user code (the
        # loop's private iterator is no other object the program can see).
        return args[0].src, False, ()
    if (f is builtins.tuple or f is builtins.list) and n == 1 and type(args[0]) in _CONTAINERS:
        # A copy of the items (a dict's keys): iterating a builtin container runs no user code
        # and the items are only referenced — a read of the whole container.
        return args[0], False, ()
    if (f is builtins.dict and n == 1 and type(args[0]) is dict) or \
            (f is builtins.set and n == 1 and type(args[0]) is set):
        # An owned dict's/set's keys are atoms (`owned_ok`): copying rehashes them only.
        return args[0], False, ()
    if (f is _contains or f is _not_contains) and n == 2:
        x, o = args
        if _atom(x) and type(o) in (dict, set):
            return _keyed(o, False, (), x)
        if type(o) is list and _atom(x) and type(x) is not bytes and _atoms_only(o):
            # Compares atoms only — while the items are atoms, which an earlier append still
            # pending may change: asked again when the call is about to run (`recheck`).
            return o, False, (), None, True
    return None


class _Pending:
    """The marker `scope_pending` sees for an argument whose value is not known yet."""
    __slots__ = ()

    def __repr__(self):
        return "<pending>"


PENDING = _Pending()


def scope_pending(f, args: tuple, kwnames: tuple):
    """`(receiver, writes, part)` for a call some of whose arguments are `PENDING`, when it touches
    nothing but `receiver` whatever values they turn out to be: they are only stored into it
    (`lst.append(x)`, `lst.insert(i, x)`, `d[k] = x` with an atom key), so the call is an
    operation on its receiver alone (what the stored value is decides only whether it escapes).
    Else None."""
    if kwnames or type(f) is FreshArgs:
        return None
    n = len(args)
    if type(f) is _BUILTIN_METHOD and type(f.__self__) is list:
        name = f.__name__
        if name == "append" and n == 1:
            return f.__self__, True, None
        if name == "insert" and n == 2 and type(args[0]) is int:
            return f.__self__, True, None
        return None
    if f is _setitem and n == 3:
        o, k, _ = args
        if type(o) is list and type(k) is int:
            return o, True, None
        if type(o) is dict and _atom(k):
            return o, True, hash(k)
    if f is _list_extend and n == 2 and type(args[0]) is list and type(args[1]) is tuple:
        # A comprehension's append: the host passes a tuple with pending items as a tuple.
        return args[0], True, None
    return None


_MISSING = object()
_WHOLE = object()  # a store into a list (`_store`): no entry of a dict
_FUNCTION = type(lambda: None)


def _same_key(a, b) -> bool:
    """Whether atoms `a` and `b` are one key of a dict (identity, or equal hash and `==`; comparing
    atoms runs no user code)."""
    return a is b or (hash(a) == hash(b) and a == b)


def _plain_containers(values, out: set, budget: list) -> bool:
    """Whether `values` are plain data — atoms, and exact lists, tuples, dicts (atom keys), sets
    and frozensets of plain data — adding the ids of the mutable containers among them to `out`.
    Reading or converting plain data (`repr`, `str`, iterating it) runs no code of the program.
    `budget` ([n]) bounds the objects looked at: False once it runs out."""
    todo = list(values)
    while todo:
        x = todo.pop()
        t = type(x)
        if t in ATOMS:
            continue
        budget[0] -= 1
        if budget[0] < 0:
            return False
        if t is list or t is set:
            if id(x) not in out:
                out.add(id(x))
                todo.extend(x)
        elif t is dict:
            if id(x) not in out:
                out.add(id(x))
                if not all(type(k) in ATOMS for k in x):
                    return False
                todo.extend(x.values())
        elif t is tuple or t is frozenset:
            todo.extend(x)
        else:
            return False
    return True


_PLAIN_BUDGET = 10_000
_STDOUT = object()  # what a `print` of plain data stores into (`_store`): no object of the program


def _stdout_plain() -> bool:
    """Whether `sys.stdout` is the C text stream over a C buffer over a file: writing to it runs
    no code of the program."""
    import io
    import sys
    out = sys.stdout
    if type(out) is not io.TextIOWrapper:
        return False
    buf = out.buffer  # a FileIO itself when unbuffered (`python -u`, PYTHONUNBUFFERED)
    return type(buf) is io.FileIO or (type(buf) is io.BufferedWriter and type(buf.raw) is io.FileIO)


def _store(f, args):
    """`(dict, key)` when the call `f(*args)` (its value perhaps `PENDING`) stores one entry of an
    exact dict whose keys are all atoms, under an atom key, and releases no object whose release
    could run code (the entry is absent or holds an atom): the store then runs no code and
    changes that entry alone; `(list, _WHOLE)` for an append to an exact list; `(_STDOUT, _WHOLE)`
    for a `print` of plain data (known, or a declared type's stand-in) to a `sys.stdout` whose
    writes run no code: it reads its arguments and changes no object of the program. Else None."""
    if f is builtins.print:
        from ._declared import samples  # a declared type's stand-in is plain data of that type
        args = samples(args)
        if args is not None and all(a is not PENDING for a in args) and \
                _plain_containers(args, set(), [_PLAIN_BUDGET]) and _stdout_plain():
            return _STDOUT, _WHOLE
        return None
    if type(f) is _BUILTIN_METHOD and type(f.__self__) is list and f.__name__ == "append" and \
            len(args) == 1:
        return f.__self__, _WHOLE  # `lst.append(x)`: runs no code, releases nothing
    if f is not _setitem or len(args) != 3:
        return None
    d, k, _ = args
    if type(d) is not dict or not _atom(k) or not owned_ok(d):
        return None
    old = d.get(k, _MISSING)
    if old is not _MISSING and type(old) not in ATOMS:
        return None
    return d, k


_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_DICT = type.__dict__["__dict__"]
_GETSET = type(_TYPE_DICT)


def _type_has(t, name) -> bool:
    """Whether type `t` or a base defines `name` (read from the types' own dicts: no code runs)."""
    return any(name in _TYPE_DICT.__get__(c) for c in _TYPE_MRO.__get__(t))


def _lookup(t, name):
    """`name` in the dicts of `t`'s MRO (what `_PyType_Lookup` finds), or `_MISSING`."""
    for c in _TYPE_MRO.__get__(t):
        cd = _TYPE_DICT.__get__(c)
        if name in cd:
            return cd[name]
    return _MISSING


def _plain_attr(o, name) -> bool:
    """Whether `getattr(o, name)` runs no code of the program: a plain instance of a class whose
    metaclass is `type` with the default `__getattribute__`, `name` found in the instance's own
    dict (the builtin `__dict__`, str keys only) and not a data descriptor of the class, or found
    in the class as a function (a bound method is made), a staticmethod, or a value that is not
    a descriptor."""
    t = type(o)
    if type(t) is not type or type(name) is not str or issubclass(t, type) or \
            _lookup(t, "__getattribute__") is not object.__getattribute__:
        return False
    found = _lookup(t, name)
    d = _lookup(t, "__dict__")
    if d is _MISSING:
        inst = None
    elif type(d) is _GETSET:
        inst = d.__get__(o)
        if type(inst) is not dict or not all(type(x) is str for x in inst):
            return False
    else:
        return False
    ft = type(found)
    if found is not _MISSING and (_type_has(ft, "__set__") or _type_has(ft, "__delete__")):
        return False  # a data descriptor (property, slot) runs before the instance's dict
    if inst is not None and name in inst:
        return True
    if found is _MISSING:
        return False  # __getattr__ or AttributeError
    return ft is _FUNCTION or ft is staticmethod or not _type_has(ft, "__get__")


def _own_dict(o):
    """The instance dict `_plain_attr` reads, or None."""
    d = _lookup(type(o), "__dict__")
    return d.__get__(o) if type(d) is _GETSET else None


def _deep_reads(f, args, kwnames):
    """What a readonly call that reads its arguments' contents and nothing else reads: the ids
    of the mutable containers among them, when they are plain data (`_plain_containers`). Such
    calls: an external declared `@unordered` (readonly only because an argument is mutable: the
    declaration says it depends on nothing else and changes nothing), and `+` of two exact lists
    (which reads the two lists' slots). None otherwise."""
    if f is operator.add and not kwnames and len(args) == 2 and type(args[0]) is list and \
            type(args[1]) is list:
        return {id(args[0]), id(args[1])}
    from ._annotations import declared_unordered
    extra = declared_unordered(f)
    if extra is None:
        return None
    ids: set = set()
    if not _plain_containers(args + extra, ids, [_PLAIN_BUDGET]):
        return None
    return ids


def _reads(f, args, kwnames):
    """What a readonly call reads, when it runs no code of the program: `(container, key)` for
    one entry of an exact dict with atom keys (`key in d`, `d[key]`, `d.get(key)`) or one item of
    an exact list (`lst[i]`, `0 <= i < len(lst)`), `(obj, name)` with `obj` not a dict for a plain
    attribute read; None when it is neither."""
    if kwnames:
        return None
    n = len(args)
    if f is operator.getitem and n == 2 and type(args[0]) is list and type(args[1]) is int \
            and 0 <= args[1] < len(args[0]):
        return args[0], args[1]
    if (f is _contains or f is _not_contains) and n == 2 and type(args[1]) is dict:
        d, k = args[1], args[0]
    elif f is operator.getitem and n == 2 and type(args[0]) is dict:
        d, k = args
    elif type(f) is _BUILTIN_METHOD and type(f.__self__) is dict and f.__name__ == "get" and n in (1, 2):
        d, k = f.__self__, args[0]
    elif f is builtins.getattr and n == 2 and _plain_attr(args[0], args[1]):
        return args[0], args[1]
    else:
        return None
    if not _atom(k) or not owned_ok(d):
        return None
    return d, k


def read_passes(f, args: tuple, kwnames: tuple, writes: tuple) -> bool:
    """Whether the readonly call `f(*args)` may run before the earlier calls `writes` (each
    `(callee, args)`, pending arguments as `PENDING`): each is a store (`_store`) into a
    different entry, and the read runs no code and reads none of those entries — a dict read of
    another key (or of another dict), or a plain attribute read of an object whose own dict is
    not a stored-into dict or whose attribute is not a stored key. Nothing it returns can then
    differ from reading after them, and it has no effects they could see."""
    deep = _deep_reads(f, args, kwnames)
    r = None if deep is not None else _reads(f, args, kwnames)
    if r is None and deep is None:
        return False
    stores = []
    for wf, wargs in writes:
        s = _store(wf, wargs)
        if s is None:
            return False
        for d, k in stores:
            if d is s[0] and k is not _WHOLE and _same_key(k, s[1]):
                return False  # two stores into one entry: the second releases the first's value
        stores.append(s)
    if deep is not None:
        # Every container it reads, whole: no store may be into one of them (a print stores
        # into none).
        return not any(d is not _STDOUT and id(d) in deep for d, _ in stores)
    target, key = r
    for d, k in stores:
        if d is _STDOUT:
            continue
        if type(target) is list:
            continue  # an item that exists: appends (a list's only stores) leave it where it is
        if k is _WHOLE:
            continue  # a list: neither a dict read nor an attribute read reads one
        if type(target) is dict:
            if target is d and _same_key(key, k):
                return False
        elif _own_dict(target) is d and type(k) is str and k == key:
            return False
    return True
