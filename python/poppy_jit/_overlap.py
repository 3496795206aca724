"""Which external calls of a compiled function may overlap: a static analysis of its Bezoar text.

Every call statement `rN := rF(args)` of the Bezoar text is a call site. A site *waits for*
another when that site's result reaches it through data flow (registers, local variables, which
are treated flow-insensitively: a variable depends on every value ever stored to it) or control
flow (the condition of an enclosing `if`, the iterable of an enclosing `for`, and the condition of
any `if` containing a `break`/`continue`/`return`, which then controls everything after it and the
whole enclosing loop). Two sites may overlap when neither waits for the other and their classes
allow it: an unordered call may overlap anything, readonly calls may overlap each other,
sequential calls overlap nothing but unordered calls.

Classes are resolved from the callee where the text names it (`global X` looked up in the
function's globals): decorated externals carry theirs, `print` and friends are sequential. A callee
the text cannot name (a method, a value computed at run time) has its class decided at run time
from its arguments; the analysis then assumes the worst case, sequential. Calls of other @poppy
functions are inlined by the runtime; their own external calls are not analysed here.

Known imprecision (all in the conservative direction, i.e. overlaps may be missed, not invented):
dependences are not split by loop iteration, so two different sites in one loop are only said to
overlap when neither waits for the other in any iteration. Not modelled: intrinsic operations
(`op ...`) on user-defined objects, which the runtime may classify sequential and so order after
earlier sequential calls.
"""
from __future__ import annotations

import builtins
import re
import types
from dataclasses import dataclass, field
from typing import NamedTuple

_CALL = re.compile(r"^r(\d+) := r(\d+)\((.*)\)$")
_LET = re.compile(r"^r(\d+) := (.*)$")
_REG = re.compile(r"\br(\d+)\b")


@dataclass
class Site:
    """One call statement of the Bezoar text."""
    index: int  # 1-based, in textual (sequential program) order
    line: int  # source line, 0 if unknown
    callee: str  # a readable name: `llm`, `<r6>.split`, `r7`
    kind: str  # unordered | readonly | sequential | internal | run time
    loops: tuple  # ids of the enclosing loops, outermost first
    branches: tuple  # (if id, branch) pairs of the enclosing if blocks
    waits_for: set = field(default_factory=set)  # indices of sites this one waits for

    @property
    def worst_class(self) -> str:
        return self.kind if self.kind in ("unordered", "readonly") else "sequential"


class _Frame(NamedTuple):
    kind: str  # "if" | "loop"
    id: int  # index of the header statement
    depth: int  # indentation depth of the header
    reg: int | None  # controlling register (if condition, for iterable)
    branch: str | None  # "then" | "else" for an if


@dataclass
class _Stmt:
    depth: int
    text: str
    line: int


def _parse(bezoar: str) -> list:
    stmts = []
    for raw in bezoar.splitlines()[1:]:  # skip the `def` header
        stripped = raw.lstrip(" ")
        if not stripped or stripped.startswith("const "):
            continue
        depth = (len(raw) - len(stripped)) // 2
        line = 0
        head, sep, tail = stripped.rpartition("  @")
        if sep and tail.isdigit():
            stripped, line = head, int(tail)
        stmts.append(_Stmt(depth, stripped.strip(), line))
    return stmts


def _classify_global(name: str, globals_: dict) -> str:
    """The class of calling global `name` as far as it does not depend on the arguments."""
    from ._annotations import _CLASS_BY_NAME, _lookup_registered, _SEQUENTIAL_IDS
    obj = globals_.get(name, getattr(builtins, name, None))
    if obj is None:
        return "run time"
    spec = getattr(obj, "__poppy_external__", None)
    if spec is not None and getattr(spec, "kind", None):
        return spec.kind
    if getattr(obj, "__poppy__", False):
        return "internal"
    reg = _lookup_registered(obj)
    if reg is not None:
        return {v: k for k, v in _CLASS_BY_NAME.items()}[reg]
    if isinstance(obj, types.FunctionType) or id(obj) in _SEQUENTIAL_IDS:
        return "sequential"  # unannotated Python functions are sequential externals
    return "run time"  # classified at call time from its arguments


def analyse(bezoar: str, globals_: dict) -> list:
    """The call sites of a function's Bezoar text with the sites each waits for."""
    stmts = _parse(bezoar)
    # Pass 1: structure. For every statement the blocks enclosing it, outermost first; which
    # `if`s contain an escape; the statement range of every loop.
    frames: list = []
    ctx: list = []  # per statement: tuple of enclosing _Frame
    escape_ifs: dict = {}  # if stmt index -> its condition register
    loop_span: dict = {}  # loop stmt index -> [first, last] statement index
    for i, s in enumerate(stmts):
        popped = None
        while frames and frames[-1].depth >= s.depth:
            popped = frames.pop()
        if s.text == "else:" and popped is not None and popped.kind == "if":
            frames.append(popped._replace(branch="else"))
        ctx.append(tuple(frames))
        for f in frames:
            if f.kind == "loop":
                loop_span[f.id][1] = i
        regs = [int(r) for r in _REG.findall(s.text)]
        if s.text.startswith("if "):
            frames.append(_Frame("if", i, s.depth, regs[0], "then"))
        elif s.text.startswith("for "):  # for rITEM in rITER: the iterable controls the body
            frames.append(_Frame("loop", i, s.depth, regs[1], None))
            loop_span[i] = [i, i]
        elif s.text == "loop:":
            frames.append(_Frame("loop", i, s.depth, None, None))
            loop_span[i] = [i, i]
        elif s.text in ("break", "continue") or s.text.startswith("return "):
            for f in frames:
                if f.kind == "if":
                    escape_ifs[f.id] = f.reg

    def block_end(start: int) -> int:
        """Index of the last statement of the block opened at `start` (including `else`)."""
        end = start
        for j in range(start + 1, len(stmts)):
            if stmts[j].depth <= stmts[start].depth and stmts[j].text != "else:":
                break
            end = j
        return end

    # Statements controlled by an escaping `if`: everything after it, and its enclosing loops.
    escape_ctl: list = [set() for _ in stmts]
    for if_i, reg in escape_ifs.items():
        covered = set(range(block_end(if_i) + 1, len(stmts)))
        for f in ctx[if_i]:
            if f.kind == "loop":
                lo, hi = loop_span[f.id]
                covered |= set(range(lo, hi + 1))
        for j in covered:
            escape_ctl[j].add(reg)

    # Pass 2: data flow to a fixed point. deps[r] = call sites whose result may reach register r.
    reg_deps: dict = {}
    var_deps: dict = {}
    sites: dict = {}  # stmt index -> Site
    callee_name: dict = {}  # reg -> readable callee
    callee_kind: dict = {}
    owner_name: dict = {}  # reg -> readable name of the value (for method callees)
    changed = True

    def regs_deps(regs) -> set:
        out = set()
        for r in regs:
            out |= reg_deps.get(r, set())
        return out

    while changed:
        changed = False
        for i, s in enumerate(stmts):
            control = [f.reg for f in ctx[i] if f.reg is not None] + sorted(escape_ctl[i])
            if s.text.startswith("for "):  # the item depends on the iterable
                item, iterable = (int(r) for r in _REG.findall(s.text))
                new = regs_deps(control) | regs_deps([iterable])
                if not new <= reg_deps.get(item, set()):
                    reg_deps.setdefault(item, set()).update(new)
                    changed = True
                continue
            if s.text.startswith("store "):
                _, name, reg = s.text.split()
                new = regs_deps([int(reg[1:])]) | regs_deps(control)
                if not new <= var_deps.get(name, set()):
                    var_deps.setdefault(name, set()).update(new)
                    changed = True
                continue
            m = _LET.match(s.text)
            if not m:
                continue
            dst, expr = int(m.group(1)), m.group(2)
            new = regs_deps(control)
            call = _CALL.match(s.text)
            if call:
                func = int(call.group(2))
                new |= regs_deps([func]) | regs_deps(int(r) for r in _REG.findall(call.group(3)))
                site = sites.get(i)
                if site is None:
                    loops = tuple(f.id for f in ctx[i] if f.kind == "loop")
                    branches = tuple((f.id, f.branch) for f in ctx[i] if f.kind == "if")
                    site = sites[i] = Site(0, s.line, callee_name.get(func, f"r{func}"),
                                           callee_kind.get(func, "run time"), loops, branches)
                site.waits_for |= new  # stmt indices for now
                owner_name[dst] = f"<result of line {s.line}>" if s.line else f"<r{dst}>"
                new = new | {i}
            elif expr.startswith("global "):
                name = expr.split()[1]
                callee_name[dst] = name
                callee_kind[dst] = _classify_global(name, globals_)
            elif expr.startswith("load "):
                owner_name[dst] = expr.split()[1]
                new |= var_deps.get(expr.split()[1], set())
            elif expr.startswith("op "):
                attr = re.match(r"op getattr\.(\w+)\(r(\d+)\)", expr)
                if attr:
                    owner = int(attr.group(2))
                    callee_name[dst] = f"{owner_name.get(owner, f'<r{owner}>')}.{attr.group(1)}"
                new |= regs_deps(int(r) for r in _REG.findall(expr))
            if not new <= reg_deps.get(dst, set()):
                reg_deps.setdefault(dst, set()).update(new)
                changed = True
    ordered = sorted(sites)
    number = {stmt_i: k + 1 for k, stmt_i in enumerate(ordered)}
    out = []
    for stmt_i in ordered:
        site = sites[stmt_i]
        site.index = number[stmt_i]
        site.waits_for = {number[j] for j in site.waits_for}
        out.append(site)
    return out


def _exclusive(a: Site, b: Site) -> bool:
    """Both sit in different branches of one `if` that no loop repeats (never both run)."""
    branches_a = dict(a.branches)
    for if_id, branch in b.branches:
        if if_id in branches_a and branches_a[if_id] != branch:
            return not (set(a.loops) & set(b.loops))
    return False


def _classes_allow(a: str, b: str) -> bool:
    return "unordered" in (a, b) or (a == b == "readonly")


def overlaps(sites: list) -> list:
    """Pairs (a, b) of site indices that may be in flight at once (a == b: a site in a loop
    with its own other iterations)."""
    external = [s for s in sites if s.kind != "internal"]
    pairs = []
    for i, a in enumerate(external):
        if a.loops and a.index not in a.waits_for and _classes_allow(a.worst_class, a.worst_class):
            pairs.append((a.index, a.index))
        for b in external[i + 1:]:
            if a.index in b.waits_for or b.index in a.waits_for or _exclusive(a, b):
                continue
            if _classes_allow(a.worst_class, b.worst_class):
                pairs.append((a.index, b.index))
    return pairs


def report(bezoar: str, globals_: dict) -> str:
    """A readable table of the call sites and the pairs that may overlap."""
    sites = analyse(bezoar, globals_)
    if not sites:
        return "no call sites"
    by_index = {s.index: s for s in sites}
    lines = ["call sites (sequential program order):"]
    for s in sites:
        kind = s.kind if s.kind != "run time" else "decided at run time (assumed sequential)"
        where = f"line {s.line}" if s.line else "line ?"
        loop = "  in a loop" if s.loops else ""
        waits = ", ".join(f"#{w}" for w in sorted(s.waits_for)) or "nothing"
        lines.append(f"  #{s.index:<3} {where:<9} {s.callee:<20} {kind}{loop}; waits for {waits}")
    pairs = overlaps(sites)
    lines.append("may overlap:" if pairs else "may overlap: none")
    for a, b in pairs:
        sa, sb = by_index[a], by_index[b]
        if a == b:
            lines.append(f"  #{a} {sa.callee} with itself in other loop iterations")
        else:
            lines.append(f"  #{a} {sa.callee}  ∥  #{b} {sb.callee}")
    return "\n".join(lines)
