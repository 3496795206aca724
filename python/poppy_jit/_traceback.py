"""Traceback entries for the @poppy frames a λO run replaced.

While a @poppy function runs on the runtime its frame is not on the interpreter stack, so an
exception from one of its external calls would reach the caller with only the external's own
frames. `place` (called by the Rust host when a run fails at a known source line) prepends the
entries CPython would have had: the run's function at the failing line and, when the failing
call was in a @poppy function inlined into the run, that function's frame after the caller's
one at the line of the call to it. Leading frames of the runtime itself (intrinsics implemented
in Python) are dropped, since CPython evaluates those operations without a Python frame.
"""
from __future__ import annotations

import dis
import os
import types

_PKG_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep
# The call instructions (3.13 has a keyword call of its own).
_CALLS = {dis.opmap[n] for n in ("CALL", "CALL_KW") if n in dis.opmap}
_RAISE = dis.opmap["RAISE_VARARGS"]
_CACHE = dis.opmap["CACHE"]
# (Names of every version; each has some of them.)
_NAME_LOADS = {dis.opmap[n] for n in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_FAST", "LOAD_FAST_CHECK", "LOAD_DEREF",
                                      "LOAD_CLASSDEREF", "LOAD_FROM_DICT_OR_DEREF", "LOAD_ATTR", "LOAD_METHOD")
               if n in dis.opmap}


def _units(code):
    """(byte offset, opcode, line) of every instruction (inline caches skipped)."""
    co = code.co_code
    out = []
    for i, pos in enumerate(code.co_positions()):
        op = co[2 * i]
        if op != _CACHE:
            out.append((2 * i, op, pos[0]))
    return out


def _at_line(code, line):
    """Offsets of the instructions at `line` and of the CALLs among them."""
    units = [(off, op) for off, op, ln in _units(code) if ln == line]
    return [off for off, _ in units], [off for off, op in units if op in _CALLS]


def _call_of(code, line, callee) -> int | None:
    """The offset of the CALL at `line` of `code` that calls what is loaded there by the name of
    `callee` (the first CALL after that load that brings the stack back to one value above its
    depth before the load), if the name is loaded exactly once on the line."""
    name = getattr(callee, "__name__", None)
    ins = [i for i in dis.get_instructions(code) if i.positions.lineno == line]
    loads = [k for k, i in enumerate(ins) if i.opcode in _NAME_LOADS and i.argval == name]
    if len(loads) != 1:
        return None
    depth = 0
    base = None
    for k, i in enumerate(ins):
        if k == loads[0]:
            base = depth
        try:
            depth += dis.stack_effect(i.opcode, i.arg if i.opcode >= dis.HAVE_ARGUMENT else None, jump=False)
        except ValueError:
            return None
        if base is not None and i.opcode in _CALLS and depth <= base + 1:
            return i.offset
    return None


def _call_site(caller, callee) -> int | None:
    """The one line of `caller` that calls something loaded by the name of `callee`, if unique."""
    name = getattr(callee, "__name__", None)
    if name is None:
        return None
    lines = set()
    call_lines = {ln for _, op, ln in _units(caller.__code__) if op in _CALLS}
    for ins in dis.get_instructions(caller.__code__):
        if ins.opcode in _NAME_LOADS and ins.argval == name and ins.positions.lineno in call_lines:
            lines.add(ins.positions.lineno)
    return lines.pop() if len(lines) == 1 else None


def _chain(top, inlined, line):
    """([(function, line)] from the run's function down to the one the failing call is in,
    whether that chain is complete), or the list of candidate functions when `line` cannot be
    attributed to exactly one."""
    funcs, codes = [top], {top.__code__}
    for f in inlined:
        if f.__code__ not in codes:
            funcs.append(f)
            codes.add(f.__code__)
    recursive = any(f.__code__ is top.__code__ for f in inlined)
    owners = [f for f in funcs if _at_line(f.__code__, line)[0]]
    if len(owners) != 1:
        return owners
    target = owners[0]
    if target is top:
        return [(top, line)], not recursive
    # The unique path of unique call sites top -> ... -> target through inlined functions.
    paths = []

    def walk(f, path, seen):
        if len(paths) > 1:
            return
        for g in funcs[1:]:
            if g.__code__ in seen:
                continue
            site = _call_site(f, g)
            if site is None:
                continue
            step = path + [(f, site)]
            if g is target:
                paths.append(step + [(g, line)])
            else:
                walk(g, step, seen | {g.__code__})

    walk(top, [], {top.__code__})
    if len(paths) == 1 and not recursive:
        return paths[0], True
    return [(target, line)], False


def _loads_of(code, line: int, name: str) -> list:
    """Offsets of the instructions on `line` that load the global (or module-level) `name`."""
    return [i.offset for i in dis.get_instructions(code)
            if i.opname in ("LOAD_GLOBAL", "LOAD_NAME") and i.argval == name
            and i.positions is not None and i.positions.lineno == line]


def _strip_runtime(tb):
    """Drop leading entries of poppy_jit's own Python code (intrinsics, helpers)."""
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_PKG_DIR):
        tb = tb.tb_next
    return tb


def place(exc: BaseException, top, args: tuple, inlined: list, line: int, on_stack: bool = False):
    """Prepend the replaced @poppy frames to `exc.__traceback__`. Returns (note, site): a note for
    what the traceback cannot show (None when it shows everything CPython's would) and, when the
    run's own frame is on the stack (`on_stack`: its entry is added by CPython as the exception
    leaves it), the (line, CALL offset or -1) that entry should show, else None."""
    from . import _core

    found = _chain(top, inlined, line)
    if isinstance(found, list):
        tb = _strip_runtime(exc.__traceback__)
        if tb is None and not on_stack:
            # Nothing left of the failing call's own frames (a builtin, or frames of poppy_jit's
            # package): CPython's traceback has at least the entry of the function the exception
            # passes through (a handler or an `__exit__` sees it), so the run's function gets
            # one, at its `def` line (the note says what is missing).
            first = _original(top).co_firstlineno
            offsets = _at_line(_original(top), first)[0]
            tb = types.TracebackType(None, _core._frame(top, args, offsets[0] if offsets else -1), -1, first)
        exc.__traceback__ = tb
        names = " or ".join(f.__qualname__ for f in found or [top])
        return f"poppy_jit: raised by the external call at line {line} of {names}", None
    chain, complete = found
    # Raised by a compiled `raise` statement (the `raise` intrinsic): the innermost entry shows
    # the statement, as CPython's does.
    from ._intrinsics import RAISES
    from ._rt import RERAISE_CODE
    # An exception no compiled handler matched leaves through `_rt.reraise` (its entry first).
    first = exc.__traceback__
    while first is not None and first.tb_frame.f_code is RERAISE_CODE:
        first = first.tb_next
    raised = first is not None and first.tb_frame.f_code in RAISES
    tb = _strip_runtime(exc.__traceback__)
    # The innermost entry's caret points at the call only when the failure is known to come out
    # of the one call on that line (a Python frame below it, or an inlined callee's call site).
    inner_from_call = tb is not None
    site = None
    for depth in range(len(chain) - 1, -1, -1):
        func, ln = chain[depth]
        own = depth == 0 and on_stack and func is top
        code = _original(func) if own else func.__code__
        offsets, calls = _at_line(code, ln)
        innermost = depth == len(chain) - 1
        tb_lasti = calls[0] if len(calls) == 1 and (inner_from_call or not innermost) else -1
        if len(calls) > 1 and not innermost:
            # Several calls on the line: the one of the inlined function the chain goes into.
            tb_lasti = _call_of(code, ln, chain[depth + 1][0]) or -1
        if raised and innermost:
            raises = [off for off, op, l in _units(code) if l == ln and op == _RAISE]
            tb_lasti = raises[0] if len(raises) == 1 else -1
        elif innermost and type(exc) is NameError and isinstance(exc.name, str):
            # A failed global look-up: CPython's caret marks the name's load.
            loads = _loads_of(code, ln, exc.name)
            tb_lasti = loads[0] if len(loads) == 1 else tb_lasti
        if own:
            site = (ln, tb_lasti)
            break
        frame_lasti = tb_lasti if tb_lasti >= 0 else (offsets[0] if offsets else -1)
        frame = _core._frame(func, args if func is top else (), frame_lasti)
        tb = types.TracebackType(tb, frame, tb_lasti, ln)
    exc.__traceback__ = tb
    if on_stack and site is None:
        # The run's frame is on the stack but the call in it that led to the failure is not
        # known: it shows its `def` line (the note says what is missing).
        site = (_original(top).co_firstlineno, -1)
    if complete:
        return None, site
    owner = chain[-1][0].__qualname__
    return (f"poppy_jit: raised by the external call at line {line} of {owner}; the frames of the "
            f"inlined @poppy calls that led there from {top.__qualname__} are not shown"), site


def _original(func):
    """The code object without the interception prologue."""
    from . import _prologue
    return _prologue.original(func.__code__)
