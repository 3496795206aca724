"""`match` statements in compiled code (src/lift/patterns.rs): the pattern opcodes of CPython
3.11 as intrinsics, with ceval.c's semantics and error messages (`MATCH_SEQUENCE`,
`MATCH_MAPPING`, `GET_LEN`, `MATCH_KEYS`, `MATCH_CLASS`)."""
from __future__ import annotations

_TPFLAGS_SEQUENCE = 1 << 5
_TPFLAGS_MAPPING = 1 << 6
_TPFLAGS_MATCH_SELF = 1 << 22


def match_sequence(subject):
    return bool(type(subject).__flags__ & _TPFLAGS_SEQUENCE)


def match_mapping(subject):
    return bool(type(subject).__flags__ & _TPFLAGS_MAPPING)


def get_len(x):
    return len(x)


def match_keys(subject, keys):
    """The values of `subject` for `keys` (a tuple), looked up with its `get`, or None."""
    if not keys:
        return ()
    get = subject.get
    dummy = object()
    seen = set()
    values = []
    for k in keys:
        if k in seen:
            raise ValueError(f"mapping pattern checks duplicate key ({k!r})")
        seen.add(k)
        v = get(k, dummy)
        if v is dummy:
            return None
        values.append(v)
    return tuple(values)


def _name(cls) -> str:
    # tp_name: the qualified "module.name" of a static (C) type outside builtins, else __name__.
    if cls.__flags__ & (1 << 9) or cls.__module__ == "builtins":  # Py_TPFLAGS_HEAPTYPE
        return cls.__name__
    return f"{cls.__module__}.{cls.__name__}"


_MISSING = object()


def match_class(subject, cls, names, nargs):
    """The `nargs` positional (by `__match_args__`) then the keyword attributes `names` of
    `subject` if it is an instance of `cls`, else None."""
    if not isinstance(cls, type):
        raise TypeError("called match pattern must be a type")
    if not isinstance(subject, cls):
        return None
    seen = set()
    attrs = []

    def attr(name):
        if name in seen:
            raise TypeError(f"{_name(cls)}() got multiple sub-patterns for attribute {name!r}")
        seen.add(name)
        return getattr(subject, name, _MISSING)

    if nargs:
        match_self = False
        try:
            match_args = cls.__match_args__
        except AttributeError:
            match_self = bool(cls.__flags__ & _TPFLAGS_MATCH_SELF)
            match_args = ()
        else:
            if type(match_args) is not tuple:
                raise TypeError(f"{_name(cls)}.__match_args__ must be a tuple (got {type(match_args).__name__})")
        allowed = 1 if match_self else len(match_args)
        if allowed < nargs:
            plural = "" if allowed == 1 else "s"
            raise TypeError(f"{_name(cls)}() accepts {allowed} positional sub-pattern{plural} ({nargs} given)")
        if match_self:
            attrs.append(subject)
        else:
            for i in range(nargs):
                name = match_args[i]
                if type(name) is not str:
                    raise TypeError(f"__match_args__ elements must be strings (got {type(name).__name__})")
                v = attr(name)
                if v is _MISSING:
                    return None
                attrs.append(v)
    for name in names:
        v = attr(name)
        if v is _MISSING:
            return None
        attrs.append(v)
    return tuple(attrs)
