"""Internal regions: a stretch of a @poppy function that runs as one generated Python function.

The compiler (src/bezoar/passes/regions.rs) chooses stretches that contain a loop and whose
operations, on builtin data, touch nothing but their operands, and writes each as the source of
a function of its live-in values returning its live-out values. `make` compiles that source once
per translation. A `Region` call runs it only when every live-in is *closed*: an immutable atom,
a tuple or frozenset of closed values, or one of the builtins in `_BUILTINS` (by identity). From
closed values, every operation a region may contain reaches only builtin data the region was
given or made, so the run is pure: the call is unordered, and declining is always possible.

A stretch that changes no object it did not make itself may also be given a list, dict or set of
closed values (the caller's, or one the run owns) for the live-ins the compiler marks
(`Region.reads`): it only reads that container, so the call is readonly, or ordered against that
one owned container alone (per-object ordering, `Region.scope`), and declining is still invisible.

It declines (returns None) on any other live-in and on any exception; the compiled code then
runs the stretch operation by operation, which raises exactly where CPython does.

A run returns its live-outs as `Outputs`, a tuple that also names the lists, dicts and sets among
them that the run made itself and that nothing else reaches (`fresh`): the runtime owns those
exactly as if the compiled code had built them (per-object ordering, src/host/regions.rs). An
output that is a live-in, that appears twice, or that another output reaches (a list inside a
returned tuple or list) is not fresh: in the compiled code storing it anywhere is an escape.
"""
from __future__ import annotations

import builtins

from ._contract import ATOMS as _KEY_ATOMS
from ._contract import READONLY as _READONLY
from ._contract import UNORDERED as _UNORDERED

# Immutable atoms whose operations run only builtin code.
_ATOMS = frozenset({int, float, complex, str, bytes, bool, type(None), range, type(...)})
# Builtins a region may call (they call back only what they are given, which is closed too); the
# compiler lists the same names (REGION_BUILTINS in src/bezoar/passes/regions.rs).
_BUILTINS = frozenset(id(f) for f in (
    abs, all, any, ascii, bin, bool, bytes, chr, complex, dict, divmod, enumerate, filter, float,
    format, frozenset, hash, hex, int, isinstance, iter, len, list, map, max, min, next, oct, ord,
    pow, range, repr, reversed, round, set, slice, sorted, str, sum, tuple, zip))
_MAX_DEPTH = 20
_CONTAINERS = (list, dict, set)
# Non-atom values `fresh` looks at inside outputs before it gives up (then nothing is fresh).
_SCAN_BUDGET = 100_000


class Outputs(tuple):
    """A region run's live-outs; `fresh` holds those the runtime may own (module doc). Its items
    are read by `getitem` only, which touches none of them (the annotation library classifies it
    as a tuple), and per-object ordering does not look inside it: the fresh containers are owned
    from the region call on, the others are no more reachable than before."""

    fresh = ()


_SEQS = (list, dict, set, tuple, frozenset)


def _inner_ids(outs, budget: int):
    """Ids of the containers reachable from the outputs `outs` through at least one container
    or tuple, or None past `budget` values or at any other object (an iterator or a bound
    method of a list reaches the list)."""
    seen = set()
    stack = []
    for o in outs:
        t = type(o)
        if t in _SEQS:
            stack.append(o)
        elif t not in _ATOMS:
            return None
    count = 0
    while stack:
        o = stack.pop()
        for part in ((o.keys(), o.values()) if type(o) is dict else (o,)):
            if set(map(type, part)) <= _ATOMS:
                continue  # the common case, without a loop in Python
            for x in part:
                tx = type(x)
                if tx in _ATOMS:
                    continue
                count += 1
                if count > budget or tx not in _SEQS:
                    return None
                if id(x) not in seen:
                    seen.add(id(x))
                    stack.append(x)
    return seen


def _fresh(outs: tuple, given=None):
    """The outputs the runtime may own: exact lists, dicts and sets (dicts and sets only with
    atom keys, which per-object ordering needs) that appear once, that no output reaches and
    that are not among the containers the region was `given`. None when an output reaches a
    given container (or might: past the scan's budget)."""
    cands = []
    ids = set() if given is None else {id(g) for g in given}
    dup = set(ids)
    for o in outs:
        t = type(o)
        if t in _CONTAINERS:
            if id(o) in ids:
                dup.add(id(o))
            else:
                ids.add(id(o))
                if t is list or set(map(type, o)) <= _KEY_ATOMS:
                    cands.append(o)
    if not cands and given is None:
        return ()
    inner = _inner_ids(outs, _SCAN_BUDGET)
    if given is not None and (inner is None or any(id(g) in inner for g in given)):
        return None
    if inner is None:
        return ()
    return tuple(o for o in cands if id(o) not in dup and id(o) not in inner)


def closed(x, depth: int = 0) -> bool:
    t = type(x)
    if t in _ATOMS:
        return True
    if t is tuple or t is frozenset:
        if depth >= _MAX_DEPTH:
            return False
        for item in x:
            if type(item) not in _ATOMS and not closed(item, depth + 1):
                return False
        return True
    return id(x) in _BUILTINS


def flat(x) -> bool:
    """A list, dict or set (exact) of closed values: given to a region that only reads its
    containers (`Region.reads`), the one mutable object the region can reach that it did not
    make."""
    t = type(x)
    if t is list or t is set:
        parts = (x,)
    elif t is dict:
        parts = (x.keys(), x.values())
    else:
        return False
    for part in parts:
        if not set(map(type, part)) <= _ATOMS and not all(closed(v) for v in part):
            return False
    return True


class Region:
    """One region's callable: `region(*live_ins)` -> `Outputs`, or None (declined).

    `reads[i]`: live-in i may be a container of closed values (`flat`) instead of a closed
    value: the stretch changes no object it did not make (the compiler's `containers_read`), so
    the region only reads it. Then the call reads mutable state: it is readonly (in the global
    order), or ordered against its one container alone when that is a container the run owns
    (`scope`). On any other live-in the region declines without touching it: unordered."""

    __slots__ = ("fn", "__name__", "__qualname__", "source", "runs", "declined", "reads")

    def __init__(self, fn, name: str, source: str, reads=()) -> None:
        self.fn = fn
        self.__name__ = self.__qualname__ = name
        self.source = source
        self.runs = 0
        self.declined = 0
        # None when no live-in may be a container (most regions: the check is then the old one).
        self.reads = tuple(reads) if fn is not None and any(reads) else None

    def __call__(self, *args):
        fn = self.fn
        if fn is not None:
            reads = self.reads
            given = None  # the containers among the live-ins
            for i, a in enumerate(args):
                if type(a) in _ATOMS or closed(a):
                    continue
                if reads is None or not reads[i] or not flat(a):
                    break
                if given is None:
                    given = []
                given.append(a)
            else:
                try:
                    out = fn(*args)
                except Exception:
                    pass
                else:
                    fresh = _fresh(out, given)
                    if fresh is not None:
                        self.runs += 1
                        res = Outputs(out)
                        res.fresh = fresh
                        return res
                    # An output reaches a container it was given: in the compiled code storing
                    # it there is an escape, which the region call is not. It changed nothing:
                    # the stretch runs operation by operation instead.
        self.declined += 1
        return None

    def reached(self, args) -> tuple:
        """The containers among `args` a call may read: none when it surely declines (a live-in
        that is neither closed nor a container it may read), else those it may read."""
        reads = self.reads
        if reads is None:
            return ()
        if len(args) != len(reads):
            # The known arguments of a call still waiting for others (per-object ordering's
            # walk): positions are lost, so any container among them may be read.
            return tuple(a for a in args if type(a) not in _ATOMS and not closed(a))
        out = ()
        for i, a in enumerate(args):
            if type(a) in _ATOMS or closed(a):
                continue
            if not reads[i] or type(a) not in _CONTAINERS:
                return ()
            out += (a,)
        return out

    def classify(self, args) -> int:
        """The call's reordering class (`_annotations.classify`): readonly when it may read a
        container it is given (per-object ordering may still decide that it is ordered against
        that container alone, see `scope`), else unordered."""
        return _READONLY if self.reached(args) else _UNORDERED

    def scope(self, args):
        """For `_objects.scope`: (container, False, ()) when the one mutable object the call
        may read is that container, else None."""
        one = self.reached(args)
        return (one[0], False, ()) if len(one) == 1 else None

    def __repr__(self) -> str:
        return f"<poppy_jit region {self.__name__}>"


def make(name: str, source: str, label: str, consts: dict, reads=()) -> Region:
    """Compile a region's source (`label` names it in code objects). A region whose constants
    are not all closed, or whose source does not compile, always declines."""
    fn = None
    if all(closed(c) for c in consts.values()):
        namespace = {"__builtins__": builtins, "__name__": "poppy_jit._regions"}
        namespace.update(consts)
        try:
            exec(compile(source, label, "exec"), namespace)
            fn = namespace[name]
        except SyntaxError:  # a bug in the generator: the stretch runs operation by operation
            fn = None
    return Region(fn, f"{label}", source, reads)
