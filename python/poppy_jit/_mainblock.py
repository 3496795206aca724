"""The launched script's `if __name__ == "__main__":` block, compiled (`python -m poppy_jit run`).

Module code reads and writes its variables by name in the module's globals, and the compiler
translates functions only. So the launcher hands the main block's leading statements to the
runtime as a function of their own — `<module>` by name, the script's globals as its globals —
whose variables are locals where that cannot be told apart from module code, and globals
everywhere else:

- a name the block assigns becomes a local unless other code could read or write the global while
  the block runs: a name that a function, lambda or class anywhere in the script mentions, that the
  block deletes or binds with `except … as`, or that might be read before the block assigns it
  (while the module has no such global yet: CPython raises NameError there, a local would raise
  UnboundLocalError). A local that already has a global value starts with it;
- when those statements end, the locals are written to the module's globals in the order they
  were first assigned (the rest of the block, and anything after it, sees them as usual); a block
  left by an exception leaves them unwritten (only exit handlers could see the difference, and a
  function that reads one of those names keeps it global).

Compiled are the block's statements up to the first one that the function form could change:
one that defines a function, class or lambda (their `__qualname__` would change), declares
`global`, annotates a variable (module code stores it in `__annotations__`), imports `*`, or uses
introspection (a debugger, frames, `globals()`/`locals()`/`vars()`,
`exec`/`eval`, the `__main__` module by name, poppy_jit itself: its stats describe finished runs). That statement and the ones after it run as
module code, after the write-back. Nothing is compiled when the script itself uses any of those
on its module's namespace, when the runtime is off (`--plain`, PYTHONPOPPY=0), or when the config
names entry functions outside the script (`_launch` decides: compiled, the block would reach them
through code that runs plainly, where they would run plainly too).

Tracebacks read as without the launcher: `run` cuts the call of the block (launcher frames and
the module frame that called it) so the block's frames are the module's.

This module owns the transformation and the block's run; `_launch` calls `transform` and
`_why` reports what was (not) compiled.
"""
from __future__ import annotations

import ast
import copy
import sys
import types

# What makes a statement of the block run as module code (it would see the function instead):
# names of introspective builtins and modules, attributes reaching frames or the debugger.
_INTROSPECTIVE_NAMES = frozenset({
    "globals", "locals", "vars", "exec", "eval", "dir", "breakpoint", "__import__", "pdb", "bdb",
    "inspect", "traceback", "faulthandler", "poppy_jit",
})
_INTROSPECTIVE_ATTRS = frozenset({
    "_getframe", "currentframe", "settrace", "setprofile", "set_trace", "post_mortem", "f_back",
    "f_locals", "f_globals", "__dict__",
})
_INTROSPECTIVE_MODULES = frozenset({"pdb", "bdb", "inspect", "traceback", "faulthandler", "code",
                                    "__main__", "poppy_jit"})
# Names a script can use to reach its own namespace from anywhere: then nothing is compiled.
_NAMESPACE = frozenset({"globals", "locals", "vars", "exec", "eval"})

_blocks: dict[int, "Block"] = {}
# What `_why` reports: (script, first line, last line compiled, line where module code resumes
# or None, reason) — or (script, None, None, None, reason) when nothing was compiled.
notes: list = []


def _is_guard(test: ast.expr) -> bool:
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    names = [s for s in sides if isinstance(s, ast.Name) and s.id == "__name__"]
    consts = [s for s in sides if isinstance(s, ast.Constant) and s.value == "__main__"]
    return len(names) == 1 and len(consts) == 1


def _introspection(node: ast.AST) -> str | None:
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in _INTROSPECTIVE_NAMES:
            return n.id
        if isinstance(n, ast.Attribute) and n.attr in _INTROSPECTIVE_ATTRS:
            return n.attr
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name.split(".")[0] in _INTROSPECTIVE_MODULES:
                    return a.name
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] in _INTROSPECTIVE_MODULES:
            return n.module
    return None


def _why_not(stmt: ast.stmt) -> str | None:
    """Why a statement of the block must run as module code, or None."""
    for n in ast.walk(stmt):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            return "it defines a function, class or lambda"
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            return "a global statement"
        if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names):
            return "import *"
        if isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            return "yield or await"
        if isinstance(n, ast.AnnAssign):
            return "a variable annotation (module code stores it in __annotations__)"
    used = _introspection(stmt)
    if used:
        return f"it uses {used} (introspection)"
    return None


def _shared(source: str, filename: str, first: int, last: int) -> set:
    """Names that a function, lambda, class or comprehension of the script, other than the
    comprehensions of lines first–last, reads or writes as globals."""
    import symtable

    out = set()

    def visit(t) -> None:
        for child in t.get_children():
            inside = first <= child.get_lineno() <= last and child.get_type() == "function" \
                and child.get_name() in ("listcomp", "setcomp", "dictcomp", "genexpr")
            if not inside:
                out.update(sym.get_name() for sym in child.get_symbols() if sym.is_global())
            visit(child)

    visit(symtable.symtable(source, filename, "exec"))
    return out


class _Assigned(ast.NodeVisitor):
    """Names a statement list binds (in order of first binding), deletes, or binds with
    `except … as`; comprehension variables are the comprehension's own."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.deleted: set[str] = set()

    def _bind(self, name: str) -> None:
        if name not in self.order:
            self.order.append(name)

    def visit_Name(self, n: ast.Name) -> None:
        if isinstance(n.ctx, ast.Store):
            self._bind(n.id)
        elif isinstance(n.ctx, ast.Del):
            self.deleted.add(n.id)

    def visit_ExceptHandler(self, n: ast.ExceptHandler) -> None:
        if n.name:
            self.deleted.add(n.name)
        self.generic_visit(n)

    def visit_Import(self, n) -> None:
        for a in n.names:
            self._bind((a.asname or a.name).split(".")[0])

    visit_ImportFrom = visit_Import

    def _comprehension(self, n) -> None:
        # Its targets bind inside the comprehension; a walrus in it binds outside.
        for sub in ast.walk(n):
            if isinstance(sub, ast.NamedExpr) and isinstance(sub.target, ast.Name):
                self._bind(sub.target.id)

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _comprehension


class _Reads:
    """Definite assignment, conservatively: the names of `watch` that some statement may read
    before the statements bind them."""

    def __init__(self, watch: set) -> None:
        self.watch = watch
        self.early: set = set()

    def expr(self, node, assigned: set) -> None:
        if node is None:
            return
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in self.watch \
                    and n.id not in assigned:
                self.early.add(n.id)

    def targets(self, t, assigned: set) -> set:
        """Reads inside a target (subscripts, attributes), then the names it binds."""
        out = set(assigned)
        for n in ast.walk(t):
            if isinstance(n, (ast.Subscript, ast.Attribute)):
                self.expr(n.value, assigned)
                if isinstance(n, ast.Subscript):
                    self.expr(n.slice, assigned)
        for n in ast.walk(t):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                out.add(n.id)
        return out

    def block(self, stmts, assigned: set) -> set:
        for s in stmts:
            assigned = self.stmt(s, assigned)
        return assigned

    def stmt(self, s, assigned: set) -> set:
        if isinstance(s, ast.Assign):
            self.expr(s.value, assigned)
            for t in s.targets:
                assigned = self.targets(t, assigned)
            return assigned
        if isinstance(s, ast.AugAssign):
            if isinstance(s.target, ast.Name) and s.target.id in self.watch \
                    and s.target.id not in assigned:
                self.early.add(s.target.id)
            self.expr(s.value, assigned)
            return self.targets(s.target, assigned)
        if isinstance(s, ast.AnnAssign):
            self.expr(s.value, assigned)
            return self.targets(s.target, assigned) if s.value is not None else assigned
        if isinstance(s, (ast.For, ast.AsyncFor)):
            self.expr(s.iter, assigned)
            self.block(s.body, self.targets(s.target, assigned))
            self.block(s.orelse, assigned)
            return assigned
        if isinstance(s, ast.While):
            self.expr(s.test, assigned)
            self.block(s.body, assigned)
            self.block(s.orelse, assigned)
            return assigned
        if isinstance(s, ast.If):
            self.expr(s.test, assigned)
            return self.block(s.body, assigned) & self.block(s.orelse, assigned)
        if isinstance(s, (ast.With, ast.AsyncWith)):
            inner = assigned
            for item in s.items:
                self.expr(item.context_expr, inner)
                if item.optional_vars is not None:
                    inner = self.targets(item.optional_vars, inner)
            self.block(s.body, inner)
            return assigned
        if isinstance(s, (ast.Import, ast.ImportFrom)):
            return assigned | {(a.asname or a.name).split(".")[0] for a in s.names}
        if isinstance(s, (ast.Pass, ast.Break, ast.Continue)):
            return assigned
        if isinstance(s, (ast.Expr, ast.Raise, ast.Assert, ast.Return, ast.Delete)):
            self.expr(s, assigned)
            return assigned
        # try, match, anything else: every read counts as early, nothing is bound for sure
        self.expr(s, set())
        return assigned


class Block:
    def __init__(self, stmts, filename: str, shared: set, first: int, last: int) -> None:
        self.stmts = stmts
        self.filename = filename
        self.shared = shared
        self.first, self.last = first, last
        a = _Assigned()
        for s in stmts:
            a.visit(s)
        self.order = [n for n in a.order if n not in shared and n not in a.deleted]
        self.assigned = set(a.order)


def transform(tree: ast.Module, source, filename: str) -> ast.Module:
    """The script with its main block's leading statements replaced by a call of
    `run_block(id)` (see the module doc); unchanged if there is nothing to compile."""
    guard = next((s for s in tree.body if isinstance(s, ast.If) and _is_guard(s.test)), None)
    if guard is None:
        return tree
    uses = sorted({n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} & _NAMESPACE)
    if uses or _mentions_main(tree, guard):
        what = uses[0] if uses else "its own module by name (__main__ or sys.modules)"
        notes.append((filename, None, None, None, f"the script uses {what}"))
        return tree
    n = 0
    reason = None
    for s in guard.body:
        reason = _why_not(s)
        if reason is not None:
            break
        n += 1
    if n == 0:
        notes.append((filename, None, None, None,
                      f"its first statement (line {guard.body[0].lineno}) must run as module "
                      f"code: {reason}"))
        return tree
    stmts = guard.body[:n]
    last = max(getattr(s, "end_lineno", s.lineno) or s.lineno for s in stmts)
    # Names code outside the compiled statements may read or write while they run.
    shared = _shared(source, filename, stmts[0].lineno, last)
    block = Block(copy.deepcopy(stmts), filename, shared, stmts[0].lineno, last)
    key = len(_blocks)
    _blocks[key] = block
    call = ast.Expr(ast.Call(
        func=ast.Attribute(
            value=ast.Attribute(
                value=ast.Call(ast.Name("__import__", ast.Load()), [ast.Constant("poppy_jit._mainblock")], []),
                attr="_mainblock", ctx=ast.Load()),
            attr="run_block", ctx=ast.Load()),
        args=[ast.Constant(key)], keywords=[]))
    for node in ast.walk(call):
        node.lineno = node.end_lineno = stmts[0].lineno
        node.col_offset = node.end_col_offset = 0
    guard.body[:n] = [call]
    notes.append((filename, block.first, block.last,
                  guard.body[1].lineno if len(guard.body) > 1 else None, reason))
    return tree


def _mentions_main(tree, guard) -> bool:
    """`__main__` named anywhere but in the guard's test (sys.modules["__main__"], import), or
    `sys.modules` used at all (`sys.modules[__name__]` is the module too)."""
    skip = {id(guard.test)} | {id(x) for x in ast.walk(guard.test)}
    for n in ast.walk(tree):
        if id(n) in skip:
            continue
        if isinstance(n, ast.Attribute) and n.attr == "modules" and isinstance(n.value, ast.Name) \
                and n.value.id == "sys":
            return True
        if isinstance(n, ast.Constant) and n.value == "__main__":
            return True
        if isinstance(n, (ast.Import, ast.ImportFrom)) and any(a.name == "__main__" for a in n.names):
            return True
    return False


class _Unset:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


_UNSET = _Unset()
_INIT, _NONE = "__poppy_block_init__", "__poppy_block_unset__"


def run_block(key: int) -> None:
    """Run the compiled statements of block `key` in the calling module's globals (as module
    code if the function cannot be built: never a failure of the launcher's own)."""
    block = _blocks[key]
    g = sys._getframe(1).f_globals
    try:
        fn, init, local = _build(block, g)
    except Exception as e:  # pragma: no cover - a bug here must not change the program
        block.failed = f"not compiled: {type(e).__name__}: {e}"
        code = compile(ast.Module(body=copy.deepcopy(block.stmts), type_ignores=[]),
                       block.filename, "exec", dont_inherit=True)
        exec(code, g)
        return
    values = fn(init, _UNSET)
    for n, v in zip(local, values):
        if v is not _UNSET:
            g[n] = v


def _build(block: Block, g: dict):
    """The block's function (marked @poppy), the values of its locals that have globals, and the
    names of its locals (in the order of the tuple it returns)."""
    from ._decorators import poppy

    candidates = [n for n in block.order if n not in (_INIT, _NONE)]
    present = [n for n in candidates if n in g]
    absent = set(candidates) - set(present)
    reads = _Reads(absent)
    reads.block(block.stmts, set())
    local = [n for n in candidates if n not in reads.early]
    glob = sorted(block.assigned - set(local))
    body: list = []
    if glob:
        body.append(ast.Global(names=glob))
    init = [n for n in local if n in g]
    if init:
        body.append(ast.Assign(targets=[ast.Tuple([ast.Name(n, ast.Store()) for n in init],
                                                  ast.Store())],
                               value=ast.Name(_INIT, ast.Load())))
    for n in local:
        if n not in g:
            body.append(ast.Assign(targets=[ast.Name(n, ast.Store())], value=ast.Name(_NONE, ast.Load())))
    for s in body:
        for node in ast.walk(s):
            node.lineno = node.end_lineno = block.first
            node.col_offset = node.end_col_offset = 0
    ret = ast.Return(ast.Tuple([ast.Name(n, ast.Load()) for n in local], ast.Load()))
    for node in ast.walk(ret):
        node.lineno = node.end_lineno = block.last
        node.col_offset = node.end_col_offset = 0
    fn_def = ast.FunctionDef(
        name="__poppy_main_block__",
        args=ast.arguments(posonlyargs=[], args=[ast.arg(_INIT), ast.arg(_NONE)], vararg=None,
                           kwonlyargs=[], kw_defaults=[], kwarg=None, defaults=[]),
        body=body + copy.deepcopy(block.stmts) + [ret], decorator_list=[], returns=None,
        type_comment=None, lineno=block.first, col_offset=0, end_lineno=block.last,
        end_col_offset=0)
    module = ast.fix_missing_locations(ast.Module(body=[fn_def], type_ignores=[]))
    code = compile(module, block.filename, "exec", dont_inherit=True)
    fcode = next(c for c in code.co_consts if isinstance(c, types.CodeType))
    fcode = fcode.replace(co_name="<module>", co_qualname="<module>")
    fn = types.FunctionType(fcode, g, "<module>")
    poppy(fn)
    return fn, tuple(g[n] for n in init), local


def splice(tb):
    """`tb` without the call of a compiled block: the module frame at the call and
    `run_block`'s, so the block's frames follow the module's frames as in CPython."""
    head, prev, t = tb, None, tb
    while t is not None:
        nxt = t.tb_next
        if nxt is not None and nxt.tb_frame.f_code is run_block.__code__ and nxt.tb_next is not None:
            after = nxt.tb_next
            if prev is None:
                head = after
            else:
                prev.tb_next = after
            t = after
            continue
        prev, t = t, nxt
    return head
