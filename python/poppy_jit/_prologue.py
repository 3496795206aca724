"""Interception of @poppy functions without a PEP 523 eval-frame function (CPython 3.11-3.13).

Any PEP 523 function makes CPython 3.11 stop inlining Python-to-Python calls and specialising
CALL for Python functions, for all code (docs/benchmarks.md). Instead, a @poppy function gets a
copy of its code object with a prologue right after RESUME:

    LOAD_CONST entry; LOAD_CONST None; BINARY_SUBSCR      # entry[None]: the runtime, in C
    COPY 1; LOAD_CONST DECLINE; IS_OP 0
    POP_JUMP_FORWARD_IF_TRUE +1
    RETURN_VALUE                                          # ran compiled: its result
    POP_TOP                                               # declined: the body, same frame

CPython has bound the arguments and pushed the function's real frame, so the runtime reads them
from the frame; when it declines (fallback, nested run, tracer, running loop) the original body
runs in that same frame, exactly as without poppy_jit. A subscript is used rather than a call so
that profilers see no extra C call. After the body, unreachable NOPs carry the positions of the
body's lines and calls: when a run fails, the runtime points the frame at the one for the failing
call, so the traceback entry CPython adds for the real frame shows that line.

Only code that starts with RESUME (after a closure's COPY_FREE_VARS and the MAKE_CELLs of its cell
variables: the prologue follows them, so a parameter that is a cell is read from its cell, and
free variables are read from the function's closure) and is not a generator gets a prologue (the
others fall back anyway).

An `async def` (its body starts with RETURN_GENERATOR; POP_TOP; RESUME) gets the prologue after
that RESUME, so it runs at the coroutine's first `send`, with the arguments bound. There the
runtime answers DECLINE or an awaitable run of the frame (src/hook/async_run.rs) that the prologue
awaits with the loop CPython compiles for `await` (which `gen_throw` and `cr_await` rely on):

    LOAD_CONST entry; LOAD_CONST None; BINARY_SUBSCR
    COPY 1; LOAD_CONST DECLINE; IS_OP 0
    POP_JUMP_FORWARD_IF_TRUE +6
    LOAD_CONST None
    SEND +3; YIELD_VALUE; RESUME 3; JUMP_BACKWARD_NO_INTERRUPT -4   # return await run
    RETURN_VALUE
    POP_TOP                                               # declined: the body, same frame

On 3.12 and 3.13 the loop is theirs (`build`): SEND; YIELD_VALUE n; RESUME 3;
JUMP_BACKWARD_NO_INTERRUPT; END_SEND; RETURN_VALUE, with a CLEANUP_THROW handler for the
YIELD_VALUE, so that throw() into the suspended coroutine goes to the run as CPython's await does.
"""
from __future__ import annotations

import dis
import sys

_OP = dis.opmap
# 3.11/3.12: a list indexed by opcode; 3.13: a dict by name.
_CACHES = ({_OP[name]: n for name, n in dis._inline_cache_entries.items() if n}
           if isinstance(dis._inline_cache_entries, dict)
           else {op: n for op, n in enumerate(dis._inline_cache_entries) if n})
# The CPython versions whose bytecode the compiler translates (keep in step with src/pyver).
# Elsewhere @poppy functions get no prologue: they run in plain CPython with this reason.
COMPILED_VERSIONS = ((3, 11), (3, 12), (3, 13))
_VERSION = sys.version_info[:2]
UNSUPPORTED = (None if _VERSION in COMPILED_VERSIONS
               else f"CPython {_VERSION[0]}.{_VERSION[1]}: compiled path not supported yet")
# The forward conditional jump (3.11 names its direction; 3.12 and 3.13 have forward ones only,
# 3.13's with an inline cache).
_POP_JUMP_IF_TRUE = _OP.get("POP_JUMP_FORWARD_IF_TRUE", _OP.get("POP_JUMP_IF_TRUE"))
_COROUTINE = 0x80
# The instructions a failing run's traceback entry may point at: calls (3.13 has a keyword
# call of its own), raise, and a global's load (a failed look-up's caret marks the name).
_SITE_OPS = {_OP[n] for n in ("CALL", "CALL_KW", "RAISE_VARARGS", "LOAD_GLOBAL") if n in _OP}
# Generators, async generators and iterable coroutines get no prologue (they fall back anyway).
_NOT_SIMPLE = 0x20 | 0x100 | 0x200


def _yield_from_arg():
    """YIELD_VALUE's argument in this version's own await loop (3.12: 2; 3.13: 1, which marks the
    frame as suspended in a yield-from, what `throw()` and `cr_await` read), from a sample."""
    ns: dict = {}
    exec("async def f(x):\n    await x\n", ns)
    return next((i.arg or 0) for i in dis.get_instructions(ns["f"]) if i.opname == "YIELD_VALUE")


# 3.12 and 3.13 end the await loop with END_SEND and route a throw() into the awaited run
# through a CLEANUP_THROW handler (3.11 does both inside SEND and gen_throw).
_END_SEND = "END_SEND" in _OP
_YIELD_FROM = _yield_from_arg() if _END_SEND else 0


class DECLINE:
    """The prologue's sentinel: run the original body."""


class Inert:
    """What a pickled copy of a prologue's runtime object becomes: it always declines."""

    def __getitem__(self, key):
        return DECLINE


def ineligible(code) -> str | None:
    """Why `code` cannot get a prologue, or None."""
    if UNSUPPORTED:
        return f"{UNSUPPORTED} at line {code.co_firstlineno}"
    if code.co_flags & _NOT_SIMPLE:
        return "generator"
    if _resume_unit(code) is None:
        return "code does not start with RESUME"
    return None


def _resume_unit(code):
    """Index of the RESUME unit that starts the body: the first unit, or the one after the
    COPY_FREE_VARS of a closure and the MAKE_CELLs of the cell variables; None otherwise."""
    units = code.co_code
    i = 0
    if units and units[0] == _OP["COPY_FREE_VARS"]:
        i = 1
    while 2 * i < len(units) and units[2 * i] == _OP["MAKE_CELL"]:
        i += 1
    if code.co_flags & _COROUTINE:
        if units[2 * i:2 * i + 1] != bytes((_OP["RETURN_GENERATOR"],)) or units[2 * i + 2] != _OP["POP_TOP"]:
            return None
        i += 2
    if 2 * i < len(units) and units[2 * i] == _OP["RESUME"]:
        return i
    return None


# ---- encodings (CPython 3.11 Objects/locations.md, Objects/exception_handling_notes.txt) ----

def _varint(out: bytearray, v: int) -> None:
    while v >= 64:
        out.append(64 | (v & 63))
        v >>= 6
    out.append(v)


def _svarint(out: bytearray, v: int) -> None:
    _varint(out, (-v << 1) | 1 if v < 0 else v << 1)


def encode_linetable(positions, firstlineno: int) -> bytes:
    """co_linetable for one (line, end_line, col, end_col) tuple per code unit."""
    out = bytearray()
    line = firstlineno
    i = 0
    n = len(positions)
    while i < n:
        pos = positions[i]
        j = i + 1
        while j < n and j - i < 8 and positions[j] == pos:
            j += 1
        length = j - i
        ln, end_ln, col, end_col = pos
        if ln is None:
            out.append(0x80 | (15 << 3) | (length - 1))
        elif col is None and end_col is None and end_ln == ln:
            out.append(0x80 | (13 << 3) | (length - 1))
            _svarint(out, ln - line)
            line = ln
        else:
            out.append(0x80 | (14 << 3) | (length - 1))
            _svarint(out, ln - line)
            _varint(out, (end_ln if end_ln is not None else ln) - ln)
            _varint(out, 0 if col is None else col + 1)
            _varint(out, 0 if end_col is None else end_col + 1)
            line = ln
        i = j
    return bytes(out)


def _except_varint(out: bytearray, v: int, first: bool) -> None:
    chunks = [v & 63]
    v >>= 6
    while v:
        chunks.append(v & 63)
        v >>= 6
    chunks.reverse()
    for k, c in enumerate(chunks):
        b = c | (64 if k < len(chunks) - 1 else 0)
        if first and k == 0:
            b |= 128
        out.append(b)


def encode_exception_table(entries) -> bytes:
    """co_exceptiontable for dis._ExceptionTableEntry-like entries (byte offsets)."""
    out = bytearray()
    for e in entries:
        _except_varint(out, e.start // 2, True)
        _except_varint(out, (e.end - e.start) // 2, False)
        _except_varint(out, e.target // 2, False)
        _except_varint(out, (e.depth << 1) | int(e.lasti), False)
    return bytes(out)


# ---- the rewrite ------------------------------------------------------------------------------

def _load_const(units: list, index: int) -> None:
    if index > 255:
        ext = []
        v = index >> 8
        while v:
            ext.append(v & 255)
            v >>= 8
        for b in reversed(ext):
            units.append((_OP["EXTENDED_ARG"], b))
    units.append((_OP["LOAD_CONST"], index & 255))


def _op(units: list, op, arg: int = 0) -> None:
    """Appends the instruction (opcode or name) and the inline CACHE units this version gives it."""
    op = _OP[op] if isinstance(op, str) else op
    units.append((op, arg))
    units.extend([(_OP["CACHE"], 0)] * _CACHES.get(op, 0))


def build(code, entry):
    """(code with the prologue, {(line, original CALL or RAISE_VARARGS offset, or -1): byte offset of its NOP}).

    Raises ValueError if the result would not describe the original body exactly."""
    why = ineligible(code)
    if why:
        raise ValueError(why)
    consts = code.co_consts + (entry, None, DECLINE)
    k_entry, k_none, k_decline = len(code.co_consts), len(code.co_consts) + 1, len(code.co_consts) + 2
    pro: list = []
    _load_const(pro, k_entry)
    _load_const(pro, k_none)
    _op(pro, "BINARY_SUBSCR")
    _op(pro, "COPY", 1)
    _load_const(pro, k_decline)
    _op(pro, "IS_OP")
    yield_at = None  # a coroutine's YIELD_VALUE, and its CLEANUP_THROW (3.12+), in units of `pro`
    if code.co_flags & _COROUTINE and not _END_SEND:
        wait: list = []
        _load_const(wait, k_none)
        wait.append((_OP["SEND"], 3))
        wait.append((_OP["YIELD_VALUE"], 0))
        wait.append((_OP["RESUME"], 3))
        wait.append((_OP["JUMP_BACKWARD_NO_INTERRUPT"], 4))
        wait.append((_OP["RETURN_VALUE"], 0))
        pro.append((_POP_JUMP_IF_TRUE, len(wait)))
        pro.extend(wait)
    elif code.co_flags & _COROUTINE:
        # 3.12/3.13's own await loop, as the compiler lays it out (SEND's and the backward
        # jumps' distances count from after their inline caches):
        #     LOAD_CONST None
        #  S: SEND E; Y: YIELD_VALUE; RESUME 3; JUMP_BACKWARD_NO_INTERRUPT S
        #  E: END_SEND; RETURN_VALUE
        #  C: CLEANUP_THROW; JUMP_BACKWARD_NO_INTERRUPT E      # handler of Y (depth 2)
        wait = []
        _load_const(wait, k_none)
        s = len(wait)
        _op(wait, "SEND", 3)
        y = len(wait)
        _op(wait, "YIELD_VALUE", _YIELD_FROM)
        _op(wait, "RESUME", 3)
        _op(wait, "JUMP_BACKWARD_NO_INTERRUPT", 0)
        wait[-1] = (wait[-1][0], len(wait) - s)
        e = len(wait)
        assert wait[y - 1 - _CACHES.get(_OP["SEND"], 0)][0] == _OP["SEND"] and e - y == 3
        _op(wait, "END_SEND")
        _op(wait, "RETURN_VALUE")
        c = len(wait)
        _op(wait, "CLEANUP_THROW")
        _op(wait, "JUMP_BACKWARD_NO_INTERRUPT", 0)
        wait[-1] = (wait[-1][0], len(wait) - e)
        _op(pro, _POP_JUMP_IF_TRUE, len(wait))
        yield_at = (len(pro) + y, len(pro) + c)
        pro.extend(wait)
    else:
        # The jump's distance counts from after its inline caches (3.13 has one).
        _op(pro, _POP_JUMP_IF_TRUE, 1)
        _op(pro, "RETURN_VALUE")
    _op(pro, "POP_TOP")
    shift = 2 * len(pro)
    r = _resume_unit(code)  # the prologue follows unit r

    orig = code.co_code
    positions = list(code.co_positions())
    # Dead NOPs after the body: one per line (no columns), one per CALL (its exact positions).
    sites = {}
    dead_pos = []
    body_units = len(orig) // 2
    seen_lines = []
    for i, pos in enumerate(positions):
        if pos[0] is not None and pos[0] not in seen_lines:
            seen_lines.append(pos[0])
    for ln in seen_lines:
        sites[(ln, -1)] = 2 * (1 + len(pro) + body_units - 1 + len(dead_pos))
        dead_pos.append((ln, ln, None, None))
    for i in range(body_units):
        if orig[2 * i] in _SITE_OPS and positions[i][0] is not None:
            sites[(positions[i][0], 2 * i)] = 2 * (1 + len(pro) + body_units - 1 + len(dead_pos))
            pos = positions[i]
            # `await f(...)`: CPython's traceback shows the await expression (its SEND).
            j = i + 1 + _CACHES.get(_OP["CALL"], 0)
            if orig[2 * i] == _OP["CALL"] and 2 * j + 4 < len(orig) and orig[2 * j] == _OP["GET_AWAITABLE"] and orig[2 * j + 4] == _OP["SEND"]:
                pos = positions[j + 2]
            dead_pos.append(pos)

    new_code = bytearray(orig[:2 * (r + 1)])
    for op, arg in pro:
        new_code += bytes((op, arg))
    new_code += orig[2 * (r + 1):]
    for _ in dead_pos:
        new_code += bytes((_OP["NOP"], 0))
    # A coroutine's await of its run shows the `def` line (where the suspended frame is).
    pro_pos = [(None, None, None, None)] * len(pro)
    if code.co_flags & _COROUTINE:
        at_def = (code.co_firstlineno, code.co_firstlineno, None, None)
        loop_ops = {_OP[n] for n in ("SEND", "YIELD_VALUE", "RESUME", "JUMP_BACKWARD_NO_INTERRUPT",
                                     "END_SEND", "CLEANUP_THROW") if n in _OP}
        pro_pos = [at_def if op in loop_ops else p for (op, _), p in zip(pro, pro_pos)]
    new_positions = positions[:r + 1] + pro_pos + positions[r + 1:] + dead_pos

    table = _shifted_table(code, 2 * (r + 1), shift, yield_at)

    new = code.replace(
        co_code=bytes(new_code),
        co_consts=consts,
        co_stacksize=max(code.co_stacksize, 3),
        co_linetable=encode_linetable(new_positions, code.co_firstlineno),
        co_exceptiontable=encode_exception_table(table),
    )
    # Self-checks: the body, its positions and its handlers are the original ones, shifted.
    if list(new.co_positions()) != new_positions:
        raise ValueError("line table did not round-trip")
    if dis._parse_exception_table(new) != table:
        raise ValueError("exception table did not round-trip")
    return new, sites


def _shifted_table(code, at: int, shift: int, yield_at):
    """The exception table of `code` with `shift` bytes of prologue inserted at byte `at` (after
    RESUME). Only a 3.12+ coroutine has an entry over RESUME: its StopIteration → RuntimeError
    handler, which then covers the prologue too (as CPython's covers its await), but for the
    prologue's YIELD_VALUE, whose entry is the loop's CLEANUP_THROW (`yield_at`: their units in
    the prologue), as CPython's await loop has it. (That entry may end right after RESUME: when
    the body starts with a try statement, whose own entries cut it.)"""
    table = []
    for e in dis._parse_exception_table(code):
        if e.start >= at:
            table.append(e._replace(start=e.start + shift, end=e.end + shift, target=e.target + shift))
        elif yield_at is None or e.end < at:
            raise ValueError("exception table covers RESUME")
        else:
            table.append(e._replace(end=e.end + shift, target=e.target + shift))
    if yield_at is not None:
        y, c = (at + 2 * u for u in yield_at)
        throw = dis._ExceptionTableEntry(y, y + 2, c, 2, False)
        split = []
        for e in table:
            if e.start <= y < e.end:
                split += [x for x in (e._replace(end=y), throw, e._replace(start=y + 2)) if x.start < x.end]
            else:
                split.append(e)
        if throw not in split:
            split.append(throw)
        table = sorted(split, key=lambda e: e.start)
    return table


# ---- installing and removing prologues ----------------------------------------------------------

_with_prologue: dict = {}  # original code -> code with the prologue
_originals: dict = {}  # code with the prologue -> original code


def original(code):
    """`code` without the prologue."""
    return _originals.get(code, code)


def intercept(fn, core) -> None:
    """Give the @poppy function `fn` the code with the prologue (marking its code for `core`)."""
    code = fn.__code__
    if code in _originals:
        return
    new = _with_prologue.get(code)
    if new is None:
        core.mark_poppy(code)
        why = ineligible(code)
        if why is None:
            entry = core.Prologue(code, DECLINE)
            try:
                new, sites = build(code, entry)
            except ValueError as e:
                why = str(e)
            else:
                entry._bind(new, sites, sites.get((code.co_firstlineno, -1), -1))
                _with_prologue[code] = new
                _originals[new] = code
        if why is not None:
            # It runs plainly; record why now (the translator's own reason when it has one).
            try:
                reason = core.explain(fn)["fallback"]
            except Exception:  # noqa: BLE001 - explaining is best effort
                reason = None
            core._note_fallback(fn.__qualname__, reason or f"not intercepted: {why}")
            _with_prologue[code] = code
            from . import _warnings

            _warnings.fallback(fn, reason or f"not intercepted: {why}")
            return
    fn.__code__ = new


def release(fn) -> None:
    """Give `fn` its original code back."""
    code = _originals.get(fn.__code__)
    if code is not None:
        fn.__code__ = code


def recursive(fn) -> bool:
    """Whether the @poppy function `fn` may call itself through the @poppy functions its code
    names as globals (directly, or through a cycle of them). Used by the host to bound inlining
    like CPython's recursion limit bounds frames; an over-approximation only bounds more."""
    seen = set()
    stack = [fn]
    while stack:
        f = stack.pop()
        scope = getattr(f, "__globals__", None) or {}
        code = getattr(f, "__code__", None)
        if code is None:
            continue
        for name in original(code).co_names:
            g = scope.get(name)
            if getattr(g, "__poppy__", False) and hasattr(g, "__code__"):
                if g is fn:
                    return True
                if id(g) not in seen:
                    seen.add(id(g))
                    stack.append(g)
    return False
