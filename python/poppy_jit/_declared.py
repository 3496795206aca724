"""Declared result types of externals: plain data (docs/semantics.md, "Declared result types").

An external may declare the type of its result — its return annotation (`-> list[str]`), or
explicitly: `@unordered(returns=list[str])`, or `returns = "list[str]"` in a config entry. The
types understood are plain data, built from the exact builtin types:

    str  int  float  bool  bytes  None  json
    list[T]   tuple[T, ...]   tuple[T1, T2, ...]   dict[str, T]   T1 | T2  (Optional[T])

`json` is nested dicts with str keys, lists, str, int, float, bool and None. As in typing, an
`int` may be a bool and a `float` an int or a bool; every other type is exact (a subclass of str
may override `split`). A return annotation outside this set (`-> list`, `-> MyReply`) declares
nothing; an explicit `returns=` outside it is an error.

While the call is pending, the runtime knows that operations on its result (subscripts, `len`,
`in`, iteration, str methods, formatting) run no user code and touch nothing but the value: they
are reads of it, classified from a stand-in (`hint`) before it arrives, so they pass the program
order on at once. When the result arrives it is checked against the declaration (`check`, deep,
cost proportional to its size). A value that does not match fails the call with a TypeError
naming the external and its declaration when the declaration is explicit (`returns=`, config),
or when something was already ordered on the strength of it — never a silently different
result. A declaration that comes only from a return annotation (often loose in real code: a
`-> str` that returns None on error) and that nothing relied on yet is not enforced: the actual
value is used, as in CPython, with a PoppyWarning naming the annotation (once per external).

Normal forms (hashable): a builtin type (`str`, ..., `type(None)`), `("list", T)`,
`("tuple", (T1, ...))`, `("tuple...", T)`, `("dict", T)` (str keys), `("json",)`,
`("union", (T1, ...))`.
"""
from __future__ import annotations

import ast
import types
import typing

_ATOMS = (str, int, float, bool, bytes, type(None))
_ATOM_NAMES = {"str": str, "int": int, "float": float, "bool": bool, "bytes": bytes, "None": type(None)}
JSON = ("json",)
# What each atom declaration accepts (typing's numeric tower: an int may be a bool, a float an
# int or a bool — all atoms, classified alike).
_ACCEPTS = {str: (str,), int: (int, bool), float: (float, int, bool), bool: (bool,),
            bytes: (bytes,), type(None): (type(None),)}
_JSON_ATOMS = frozenset({str, int, float, bool, type(None)})

FORMS = ("str, int, float, bool, bytes, None, json, list[T], tuple[T, ...], tuple[T1, T2], "
         "dict[str, T], T1 | T2")


class DeclarationError(TypeError):
    """A `returns=` declaration outside the plain data types."""


class Json:
    """`returns=poppy_jit.Json` (or "json" in a config): plain JSON-like data."""


# ---------------------------------------------------------------------------------------------
# Normalising declarations.

def normalise(t, strict: bool = False):
    """The normal form of a type (typing objects, builtin types, None, `Json`), or None when it
    is not plain data (strict: raise DeclarationError instead)."""
    nf = _norm(t)
    if nf is None and strict:
        raise DeclarationError(f"returns={_show(t)} is not a plain data type; use one of: {FORMS}")
    return nf


def _show(t) -> str:
    return t if isinstance(t, str) else getattr(t, "__name__", None) if isinstance(t, type) else repr(t)


def _norm(t):
    if t is None or t is type(None):
        return type(None)
    if t is Json or t == "json":
        return JSON
    if isinstance(t, str):
        try:
            return parse(t)
        except DeclarationError:
            return None
    if t in _ATOMS:
        return t
    origin = typing.get_origin(t)
    args = typing.get_args(t)
    if origin is list and len(args) == 1:
        inner = _norm(args[0])
        return None if inner is None else ("list", inner)
    if origin is tuple and args:
        if len(args) == 2 and args[1] is Ellipsis:
            inner = _norm(args[0])
            return None if inner is None else ("tuple...", inner)
        if args == ((),):
            return ("tuple", ())
        items = tuple(_norm(a) for a in args)
        return None if any(i is None for i in items) else ("tuple", items)
    if origin is dict and len(args) == 2:
        if args[0] is not str:
            return None
        inner = _norm(args[1])
        return None if inner is None else ("dict", inner)
    if origin is typing.Union or origin is types.UnionType:
        items = tuple(_norm(a) for a in args)
        if any(i is None for i in items):
            return None
        return _union(items)
    return None


def _union(items):
    flat = []
    for i in items:
        for j in (i[1] if isinstance(i, tuple) and i[0] == "union" else (i,)):
            if j not in flat:
                flat.append(j)
    return flat[0] if len(flat) == 1 else ("union", tuple(flat))


def parse(text: str):
    """A declaration written as text (a config's `returns = "list[str]"`): the same forms, read
    without evaluating anything."""
    if not isinstance(text, str):
        raise DeclarationError(f"returns must be a string naming a type (got {text!r})")
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError:
        raise DeclarationError(f"returns = {text!r} is not a type; use one of: {FORMS}") from None

    def conv(n):
        if isinstance(n, ast.Name) and n.id in _ATOM_NAMES:
            return _ATOM_NAMES[n.id]
        if isinstance(n, ast.Name) and n.id in ("json", "Json", "JSON"):
            return JSON
        if isinstance(n, ast.Constant) and n.value is None:
            return type(None)
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.BitOr):
            return _union((conv(n.left), conv(n.right)))
        if isinstance(n, ast.Subscript) and isinstance(n.value, ast.Name):
            name = n.value.id
            args = n.slice.elts if isinstance(n.slice, ast.Tuple) else [n.slice]
            if name in ("list", "List") and len(args) == 1:
                return ("list", conv(args[0]))
            if name in ("tuple", "Tuple"):
                if len(args) == 2 and isinstance(args[1], ast.Constant) and args[1].value is Ellipsis:
                    return ("tuple...", conv(args[0]))
                return ("tuple", tuple(conv(a) for a in args))
            if name in ("dict", "Dict") and len(args) == 2:
                if not (isinstance(args[0], ast.Name) and args[0].id == "str"):
                    raise DeclarationError(f"returns = {text!r}: a dict's keys must be str")
                return ("dict", conv(args[1]))
            if name == "Optional" and len(args) == 1:
                return _union((conv(args[0]), type(None)))
        raise DeclarationError(f"returns = {text!r} is not a plain data type; use one of: {FORMS}")

    return conv(node)


def render(nf) -> str:
    """The declaration as it would be written."""
    if nf is type(None):
        return "None"
    if isinstance(nf, type):
        return nf.__name__
    kind = nf[0]
    if kind == "json":
        return "json"
    if kind == "list":
        return f"list[{render(nf[1])}]"
    if kind == "tuple...":
        return f"tuple[{render(nf[1])}, ...]"
    if kind == "tuple":
        return f"tuple[{', '.join(render(i) for i in nf[1])}]" if nf[1] else "tuple[()]"
    if kind == "dict":
        return f"dict[str, {render(nf[1])}]"
    return " | ".join(render(i) for i in nf[1])


# ---------------------------------------------------------------------------------------------
# Checking a value at arrival.

def check(nf, v) -> bool:
    """Whether `v` has the declared type (exact builtin types, deep)."""
    stack = [(nf, v)]
    seen = set()  # (id, form) of containers already checked (shared ones once; json cycles end)
    while stack:
        t, x = stack.pop()
        if isinstance(t, type):
            if type(x) not in _ACCEPTS[t]:
                return False
            continue
        kind = t[0]
        if kind == "union":
            if not any(check(i, x) for i in t[1]):
                return False
            continue
        tx = type(x)
        if kind == "json":
            if tx in _JSON_ATOMS:
                continue
            if tx is not list and tx is not dict:
                return False
            key = (id(x), t)
            if key in seen:
                continue
            seen.add(key)
            if tx is list:
                stack.extend((t, i) for i in x)
            else:
                for k, i in x.items():
                    if type(k) is not str:
                        return False
                    stack.append((t, i))
            continue
        if kind == "list":
            if tx is not list:
                return False
        elif kind == "tuple..." or kind == "tuple":
            if tx is not tuple:
                return False
        elif kind == "dict":
            if tx is not dict:
                return False
        key = (id(x), t)
        if key in seen:
            continue
        seen.add(key)
        if kind == "list" or kind == "tuple...":
            stack.extend((t[1], i) for i in x)
        elif kind == "tuple":
            if len(x) != len(t[1]):
                return False
            stack.extend(zip(t[1], x))
        else:
            for k, i in x.items():
                if type(k) is not str:
                    return False
                stack.append((t[1], i))
    return True


def arrival_error(nf, v, fn, relied: str | None = None) -> TypeError:
    """The error of a result `v` of `fn` that does not have its declared type `nf`; `relied`
    says what was ordered on the strength of the declaration, when something was."""
    why = (f"{relied} relied on the declaration before the value arrived" if relied else
           "later operations may be ordered on the strength of the declaration")
    return TypeError(
        f"poppy_jit: the result of {_where(fn)} does not have its declared return type "
        f"{render(nf)} (got {_describe(v)}); {why}, so the run stops here: correct the "
        f"declaration (or remove it)")


def _where(fn) -> str:
    name = getattr(fn, "__qualname__", None) or repr(fn)
    mod = getattr(fn, "__module__", None)
    return f"{mod}:{name}" if mod else name


def _describe(v) -> str:
    t = type(v)
    if t in (list, tuple, set, frozenset) and v:
        inner = sorted({type(i).__name__ for i in list(v)[:20]})
        return f"a {t.__name__} of {' / '.join(inner)}"
    if t is dict and v:
        items = list(v.items())[:20]
        return (f"a dict of {' / '.join(sorted({type(k).__name__ for k, _ in items}))} to "
                f"{' / '.join(sorted({type(i).__name__ for _, i in items}))}")
    return f"a value of type {t.__qualname__}"


# ---------------------------------------------------------------------------------------------
# Stand-ins while the result is pending.

class Typed:
    """A pending value known by its declared type only (a container, or json): the stand-in
    the runtime classifies later operations with (`hint_apply`, `samples`)."""

    __slots__ = ("t",)

    def __init__(self, t) -> None:
        self.t = t

    def __repr__(self) -> str:
        return f"<pending {render(self.t)}>"


class Method:
    """A pending bound method `<value of type t>.name`, known by the receiver's declared type."""

    __slots__ = ("t", "name")

    def __init__(self, t, name: str) -> None:
        self.t = t
        self.name = name

    def __repr__(self) -> str:
        return f"<pending method {self.name} of {render(self.t)}>"


_STAND_INS = {str: "", int: 0, float: 0.0, bool: False, bytes: b"", type(None): None}
NO = object()


def stand_in(nf):
    """The stand-in of a value of type `nf`: an atom's stand-in value (every atom is classified
    alike), a tuple of atoms' `()`... or a `Typed`. `NO` when none is sound."""
    if isinstance(nf, type):
        return _STAND_INS[nf]
    kind = nf[0]
    if kind == "union":
        # Deeply immutable members are all classified alike: an atom member stands for them
        # (an operation the real value lacks fails for real, as in CPython).
        atoms = [i for i in nf[1] if isinstance(i, type)]
        if atoms and all(_closed(i) for i in nf[1]):
            return _STAND_INS[atoms[0]]
        return Typed(nf)
    return Typed(nf)


def _closed(nf) -> bool:
    """Every value of the type is deeply immutable (atoms and tuples of them)."""
    if isinstance(nf, type):
        return True
    kind = nf[0]
    if kind == "tuple":
        return all(_closed(i) for i in nf[1])
    if kind == "tuple...":
        return _closed(nf[1])
    if kind == "union":
        return all(_closed(i) for i in nf[1])
    return False


def sample(nf):
    """A concrete value of type `nf` whose classification is the strictest any value of the type
    can have (the annotation library classifies builtin data by its types alone): used to
    classify a call one of whose arguments is pending with this declared type."""
    if isinstance(nf, type):
        return _STAND_INS[nf]
    kind = nf[0]
    if kind == "json":
        return [{"": None}]
    if kind == "list":
        return [sample(nf[1])]
    if kind == "tuple...":
        return (sample(nf[1]),)
    if kind == "tuple":
        return tuple(sample(i) for i in nf[1])
    if kind == "dict":
        return {"": sample(nf[1])}
    # A union: a mutable member if there is one (its level is the highest).
    for i in nf[1]:
        if not _closed(i):
            return sample(i)
    return sample(nf[1][0])


def samples(args):
    """`args` with every `Typed` stand-in replaced by its `sample` (a `Method` cannot be)."""
    out = []
    for a in args:
        t = type(a)
        if t is Typed:
            out.append(sample(a.t))
        elif t is Method:
            return None
        else:
            out.append(a)
    return tuple(out)


# Results of the methods of str (and bytes) that are not atoms: by name.
_STR_LISTS = frozenset({"split", "rsplit", "splitlines"})
_STR_TRIPLES = frozenset({"partition", "rpartition"})
# Methods of a declared list / dict that only read it, with their result's type (None: the
# element type; "int", "bool": an atom; "same": the container's own type).
_LIST_READS = {"count": int, "index": int, "copy": "same"}
_DICT_READS = {"get": "get", "keys": None, "values": None, "items": None, "copy": "same"}


def _elem(nf):
    """The type of an item of a declared sequence or a value of a declared dict; None if it has
    none (a fixed tuple's items differ)."""
    kind = nf[0]
    if kind in ("list", "tuple...", "dict"):
        return nf[1]
    if kind == "json":
        return JSON
    if kind == "tuple":
        items = nf[1]
        return _union(items) if items else None
    return None


def _atom_value(x) -> bool:
    return type(x) in _ATOMS


def typed_apply(f, args, getitem, getattr_, contains, not_contains, shallow_reads, to_str=frozenset()):
    """The stand-in of the result of `f` (an operation of the runtime) on `args`, some of which
    are `Typed` stand-ins: a stand-in, NO (the result has no sound stand-in), or None (not an
    operation known here). (Its class comes from `samples`, not from here.)"""
    if not args:
        return None
    x = args[0]
    if f is contains or f is not_contains:
        return False if len(args) == 2 else None
    if id(f) in to_str:
        # str(), repr(), format() and f-string parts of plain data: a str (their class, a read
        # of the value, comes from `samples`).
        return ""
    if type(x) is not Typed:
        return None
    t = x.t
    kind = t[0]
    if kind == "union":
        return NO
    if f is getitem and len(args) == 2:
        k = args[1]
        if type(k) is slice:
            if not all(_atom_value(p) for p in (k.start, k.stop, k.step)):
                return NO
            if kind in ("list", "tuple..."):
                return Typed(t)
            if kind == "json":
                return Typed(JSON)
            return NO
        if not _atom_value(k):
            return NO
        if kind == "tuple":
            if type(k) in (int, bool) and -len(t[1]) <= k < len(t[1]):
                return stand_in(t[1][k])
            return NO
        if kind == "dict" and type(k) is not str:
            return NO  # a KeyError, or a key equal to a str: no stand-in
        if kind in ("list", "tuple...") and type(k) not in (int, bool):
            return NO  # a TypeError
        return stand_in(_elem(t))
    if f is getattr_ and len(args) == 2 and type(args[1]) is str:
        return Method(t, args[1])
    if id(f) in shallow_reads:
        return NO if f is iter or getattr(f, "__name__", "").startswith("_iter") else (
            0 if f is len or getattr(f, "__name__", "") == "_get_len" else False)
    return None


def method_apply(m, args):
    """The stand-in of the result of calling the pending method `m` (a `Method`) with `args`
    (values or stand-ins): a stand-in, NO, or None."""
    t, name = m.t, m.name
    if not all(_atom_value(a) for a in args):
        return None
    kind = t[0]
    if kind in ("list", "tuple...", "tuple"):
        r = _LIST_READS.get(name)
        if r is None:
            return None
        if r == "same":
            return Typed(t) if kind == "list" else NO
        return _STAND_INS[r]
    if kind == "dict":
        if name not in _DICT_READS:
            return None
        return Typed(t) if _DICT_READS[name] == "same" else NO
    return None


def str_method_result(m, r):
    """The stand-in of the result of `m` (a builtin method of a str or bytes stand-in) when it is
    not an atom: split → list[str] ..."""
    self = getattr(m, "__self__", None)
    if type(self) is not str:
        return NO
    name = getattr(m, "__name__", "")
    if name in _STR_LISTS and type(r) is list:
        return Typed(("list", str))
    if name in _STR_TRIPLES and type(r) is tuple:
        return ("", "", "")
    return NO
