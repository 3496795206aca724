"""Shrinking a mismatching case to a minimal standalone reproducer, and classifying it.

`minimise(source)` works on the text of a standalone program (one case, `gen.program_text`):
it deletes statements (whole chunks of a body first, then single ones, module-level helpers
included), replaces compound statements by their bodies, then replaces expressions by one of
their operands or by a constant, keeping a change only while the mismatch persists — the same
primary kind (`PRIORITY`), and no new exception type in the plain run (so it does not drift to
a different bug through a NameError of its own making). Each trial runs the candidate plain and
with PYTHONPOPPY=1 (`runner.check_program`); trials are cached by text and bounded.

`features(source)` names the constructs a reproducer uses (what a class of mismatches is
about: a global rebound by a helper, a generator with side effects, ...); `reproducer_text`
renders it as the script to report, with how to run it and the mismatch seen in a header.

Depends on `runner` and `compare`; never imports Hypothesis.
"""
from __future__ import annotations

import ast
import copy
import os
import re
import tempfile
import threading
from pathlib import Path

from .runner import check_program

PRIORITY = ("crash", "timeout", "sequential", "readonly", "unordered", "controller", "output",
            "result", "missing", "exit")
_EXC = re.compile(r"^!! (\w+):")
# CPython 3.11's parser/AST validation keeps its recursion depth in interpreter-wide state:
# parsing in two threads at once can fail with "SystemError: AST constructor recursion depth
# mismatch". Minimisations run in threads (driver), so every parse/unparse/compile holds this.
AST_LOCK = threading.RLock()


def primary(kinds) -> str | None:
    for k in PRIORITY:
        if k in kinds:
            return k
    return None


class Checker:
    """Runs candidate sources (a cache by text); `verdict(src)` or None if it has no case."""

    def __init__(self, timeout: float = 30.0, workdir: str | None = None) -> None:
        self.timeout = timeout
        self.cache: dict = {}
        self.trials = 0
        self.workdir = workdir

    def verdict(self, src: str):
        if src in self.cache:
            return self.cache[src]
        self.trials += 1
        with tempfile.TemporaryDirectory(dir=self.workdir) as tmp:
            path = Path(tmp) / "case.py"
            path.write_text(src)
            numbers = sorted({int(m) for m in re.findall(r"run_case\((\d+),", src)})
            result = check_program(path, numbers or [0], self.timeout, bisect=False) \
                if numbers else {}
        v = result.get(numbers[0]) if numbers else None
        self.cache[src] = v
        return v


def minimise(source: str, checker: Checker | None = None, max_trials: int = 250,
             log=None) -> tuple:
    """(smallest source found, its Verdict). `source` must show a mismatch."""
    checker = checker or Checker()
    start = checker.verdict(source)
    if start is None or start.status != "mismatch":
        return source, start
    shrinker = _Shrinker(checker, source, start, max_trials, log)
    shrinker.run()
    return shrinker.best, shrinker.best_v


def _exc_types(results) -> set:
    return {m.group(1) for m in (_EXC.match(x) for x in results or ()) if m}


class _Shrinker:
    def __init__(self, checker: Checker, source: str, verdict, max_trials: int, log) -> None:
        self.checker, self.log, self.budget = checker, log, max_trials
        self.goal = primary(verdict.kinds)
        self.allowed = _exc_types(verdict.plain_results)
        self.best, self.best_v = source, verdict
        norm = _normalise(source)
        if norm != source and self.keeps(checker.verdict(norm)):
            self.best, self.best_v = norm, checker.verdict(norm)

    def keeps(self, v) -> bool:
        if v is None or v.status != "mismatch" or self.goal not in v.kinds:
            return False
        return not (_exc_types(v.plain_results) - self.allowed)

    def tree(self):
        with AST_LOCK:
            return ast.parse(self.best)

    def accept(self, tree) -> bool:
        if tree is None or self.budget <= 0 or not _protect(tree):
            return False
        try:
            ast.fix_missing_locations(tree)
            with AST_LOCK:
                src = ast.unparse(tree) + "\n"
                compile(src, "<candidate>", "exec")
        except (SyntaxError, ValueError, TypeError, RecursionError):
            return False
        if src == self.best:
            return False
        if src not in self.checker.cache:
            self.budget -= 1
        v = self.checker.verdict(src)
        if self.keeps(v):
            self.best, self.best_v = src, v
            if self.log:
                self.log(f"  minimise: {len(src.splitlines())} lines "
                         f"({self.checker.trials} trials)")
            return True
        return False

    def run(self) -> None:
        changed = True
        while changed and self.budget > 0:
            changed = self.delete_pass(chunks=True)
            changed |= self.delete_pass(chunks=False)
            changed |= self.hoist_pass()
            if not changed:
                changed = self.expr_pass()

    def delete_pass(self, chunks: bool) -> bool:
        changed = False
        b = 0
        while b < len(_bodies(self.tree())) and self.budget > 0:
            n = len(getattr(*_bodies(self.tree())[b]))
            sizes = []
            size = n // 2
            while chunks and size >= 2:
                sizes.append(size)
                size //= 2
            for size in sizes or ([1] if not chunks else []):
                i = n - size
                while i >= 0 and self.budget > 0:
                    bodies = _bodies(self.tree())
                    if b >= len(bodies):
                        break
                    cur_n = len(getattr(*bodies[b]))
                    i = min(i, cur_n - size)
                    if i < 0:
                        break
                    cand = _with_body(self.tree(), b, lambda seq: seq[:i] + seq[i + size:])
                    changed |= self.accept(cand)
                    i -= size
            b += 1
        return changed

    def hoist_pass(self) -> bool:
        changed = False
        b = 0
        while b < len(_bodies(self.tree())) and self.budget > 0:
            i = len(getattr(*_bodies(self.tree())[b])) - 1
            while i >= 0 and self.budget > 0:
                bodies = _bodies(self.tree())
                if b >= len(bodies) or i >= len(getattr(*bodies[b])):
                    break
                st = getattr(*bodies[b])[i]
                options = []
                if isinstance(st, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                    options = ["body"] + (["orelse"] if getattr(st, "orelse", None) else [])
                for opt in options:
                    def repl(seq, opt=opt):
                        return seq[:i] + list(getattr(seq[i], opt)) + seq[i + 1:]
                    if self.accept(_with_body(self.tree(), b, repl)):
                        changed = True
                        break
                i -= 1
            b += 1
        return changed

    def expr_pass(self) -> bool:
        changed = False
        target = 0
        while self.budget > 0:
            count = sum(1 for n in ast.walk(self.tree())
                        if isinstance(n, ast.expr) and _simplifiable(n))
            if target >= count:
                break
            ok = False
            for choice in range(6):
                rep = _Replace(target, choice)
                new = rep.visit(self.tree())
                if rep.k < target or rep.exhausted:
                    break
                if self.accept(new):
                    changed = ok = True
                    break
            if not ok:
                target += 1
        return changed


def _normalise(src: str) -> str:
    try:
        with AST_LOCK:
            return ast.unparse(ast.parse(src)) + "\n"
    except SyntaxError:
        return src


# ------------------------------------------------------------------ tree edits
def _bodies(tree) -> list:
    """Every statement list in the tree, in pre-order: (owner node, field name)."""
    out = []

    def visit(node):
        for name in ("body", "orelse", "finalbody"):
            seq = getattr(node, name, None)
            if isinstance(seq, list) and seq and isinstance(seq[0], ast.stmt):
                out.append((node, name))
                for st in seq:
                    visit(st)
        for h in getattr(node, "handlers", []) or []:
            out.append((h, "body"))
            for st in h.body:
                visit(st)

    visit(tree)
    return out


def _with_body(tree, b: int, new_seq_fn):
    """`tree` with its b-th statement list replaced by new_seq_fn(list); None if invalid."""
    owner, name = _bodies(tree)[b]
    seq = new_seq_fn(list(getattr(owner, name)))
    if not seq:
        if isinstance(owner, ast.Module):
            return None
        if name == "orelse" or (name == "finalbody" and owner.handlers):
            setattr(owner, name, [])
            return tree
        seq = [ast.Pass()]
    setattr(owner, name, seq)
    return tree


def _protect(tree) -> bool:
    """A candidate must still call run_case."""
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
               and n.func.id == "run_case" for n in ast.walk(tree))


class _Replace(ast.NodeTransformer):
    """Replaces the target-th simplifiable expression by its choice-th option."""

    def __init__(self, target: int, choice: int) -> None:
        self.target, self.choice, self.k, self.exhausted = target, choice, -1, False

    def visit(self, node):
        if isinstance(node, ast.expr) and _simplifiable(node):
            self.k += 1
            if self.k == self.target:
                opts = _expr_options(node)
                if self.choice < len(opts):
                    return opts[self.choice]
                self.exhausted = True
        return super().visit(node)


def _simplifiable(node) -> bool:
    return isinstance(node, (ast.BinOp, ast.Call, ast.IfExp, ast.BoolOp, ast.Compare,
                             ast.UnaryOp, ast.ListComp, ast.SetComp, ast.DictComp,
                             ast.GeneratorExp, ast.JoinedStr, ast.Subscript, ast.List,
                             ast.Tuple, ast.Dict)) and not isinstance(
        getattr(node, "ctx", None), (ast.Store, ast.Del))


def _expr_options(node) -> list:
    subs = [c for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)
            and not isinstance(getattr(c, "ctx", None), (ast.Store, ast.Del))]
    if isinstance(node, ast.Call):
        subs = [a for a in node.args if not isinstance(a, ast.Starred)]
    if isinstance(node, (ast.List, ast.Tuple)) and len(node.elts) > 1:
        subs = [type(node)(elts=node.elts[:k] + node.elts[k + 1:], ctx=ast.Load())
                for k in range(len(node.elts))]
    if isinstance(node, ast.Dict) and len(node.keys) > 0:
        subs = [ast.Dict(keys=node.keys[:k] + node.keys[k + 1:],
                         values=node.values[:k] + node.values[k + 1:])
                for k in range(len(node.keys))]
    return [copy.deepcopy(s) for s in subs] + [ast.Constant(0)]


# ------------------------------------------------------------------ classification
def features(source: str) -> list:
    """The constructs a (minimal) reproducer uses, by name, sorted."""
    with AST_LOCK:
        tree = ast.parse(source)
    found = set()
    top_funcs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef,
                                                                   ast.AsyncFunctionDef))}

    def decos(fn) -> set:
        out = set()
        for d in fn.decorator_list:
            d = d.func if isinstance(d, ast.Call) else d
            if isinstance(d, ast.Name):
                out.add(d.id)
        return out

    module_names = {t.id for n in tree.body if isinstance(n, ast.Assign) for t in n.targets
                    if isinstance(t, ast.Name)}
    seen_run = False
    for n in tree.body:
        if isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and \
                getattr(n.value.func, "id", "") == "run_case":
            seen_run = True
        elif seen_run and isinstance(n, ast.Assign):
            found.add("global rebound between calls")
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(fn, ast.Lambda):
            found.add("lambda")
            continue
        ds = decos(fn) if not isinstance(fn, ast.Lambda) else set()
        has_global = any(isinstance(x, ast.Global) for x in ast.walk(fn))
        has_nonlocal = any(isinstance(x, ast.Nonlocal) for x in ast.walk(fn))
        has_yield = any(isinstance(x, (ast.Yield, ast.YieldFrom)) for x in ast.walk(fn))
        is_case = re.fullmatch(r"f\d+", fn.name) is not None
        if has_yield:
            found.add("generator with side effects")
        if has_global and not is_case:
            found.add("global rebound by a @poppy callee" if "poppy" in ds else
                      "global rebound by an external/helper")
        if has_global and is_case:
            found.add("global stored by the function itself")
        if re.fullmatch(r"make\d+", fn.name):
            found.add("@poppy closure (factory)")
        if re.fullmatch(r"bump\d+", fn.name) and has_nonlocal:
            found.add("free variable rebound via nonlocal by a helper")
        if re.fullmatch(r"g\d+", fn.name):
            found.add("inner function" + (" with nonlocal" if has_nonlocal else ""))
        if "poppy" in ds and not is_case and not re.fullmatch(r"bump\d+", fn.name):
            found.add("call of a @poppy function")
        if isinstance(fn, ast.AsyncFunctionDef) and not is_case and fn.name not in top_funcs:
            pass
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "count" and \
                getattr(node.value, "id", "") == "itertools":
            found.add("itertools.count")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            name = node.func.id
            if name in ("map", "filter"):
                found.add("lazy map/filter")
            if name in ("iter", "next"):
                found.add("iterator shared with later code")
            if name in ("s_grow", "n_grow"):
                found.add("iterated list grown by a helper")
            if name in ("s_fail", "r_fail", "ub_fail"):
                found.add("external that raises")
            if name in ("u_fail", "sa_fail"):
                found.add("async external that raises")
            if name == "n_via":
                found.add("unannotated helper calling externals (async included)")
            if name in ("s_push", "n_push", "u_len", "r_sum") or name.endswith("_push"):
                found.add("container passed to an external")
            if name == "s_consume":
                found.add("generator expression passed to an external")
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.DictComp)):
            found.add("comprehension")
        if isinstance(node, ast.GeneratorExp):
            found.add("generator expression")
        if isinstance(node, ast.For) and isinstance(node.iter, ast.Name) and \
                node.iter.id in module_names:
            found.add("for over a global container a helper mutates")
        if isinstance(node, (ast.Try, ast.With, ast.Raise)):
            found.add("exceptions")
    return sorted(found)


def reproducer_text(source: str, verdict, title: str = "") -> str:
    """The reproducer as a script with a header saying how to run it and what differs."""
    lines = ["# poppy_jit.fuzz reproducer" + (f": {title}" if title else "")]
    lines.append("# Run it twice and compare the output (it prints each call's output, result "
                 "and its trace")
    lines.append("# with the permitted reorderings normalised away):")
    lines.append("#   PYTHONHASHSEED=0 python repro.py > plain.txt; "
                 "PYTHONHASHSEED=0 PYTHONPOPPY=1 python repro.py > poppy.txt; "
                 "diff plain.txt poppy.txt")
    if verdict is not None:
        for m in verdict.mismatches[:6]:
            text = str(m).replace("\n", " ")
            lines.append("# " + (text if len(text) < 300 else text[:300] + "..."))
        if verdict.fallbacks:
            lines.append(f"# fallbacks under PYTHONPOPPY=1: {verdict.fallbacks}")
    return "\n".join(lines) + "\n" + source


def write_reproducer(directory, name: str, text: str) -> Path:
    os.makedirs(directory, exist_ok=True)
    path = Path(directory) / f"{name}.py"
    path.write_text(text)
    return path
