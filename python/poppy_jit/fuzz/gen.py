"""Random @poppy functions ("cases") built from the constructs the compiler accepts.

`cases_strategy(constructs)` is a Hypothesis strategy of `Case`s and `generate(n, seed,
constructs)` draws n distinct ones reproducibly (Hypothesis' generate phase under `@seed`, no
database). A case is a deterministic function of one byte string Hypothesis draws
(`build_case`): the generator reads its choices from it. Each case is one @poppy function
`fQQ(n, s, xs)` plus the module-level code it needs (globals, helpers, generators, @poppy
callees, a factory when it is a closure) and the driver lines that call it through
`prelude.run_case`; `QQ` stands for the case's number until `Case.render(i)`.

Every construct family is behind a switch (`CONSTRUCTS`); generated code is type-directed
(ints, strs, lists of ints, dicts str->int) and bounded (loops of at most a few iterations,
while loops whose counter moves first, containers a loop iterates are not mutated in its body
except by a worklist helper that stops growing), so a plain run terminates quickly and mostly
without exceptions; the exceptions it does raise are outcomes like any other. Hypothesis is
imported (through `hyp`) only when cases are drawn; nothing else in poppy_jit is used.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from .exprs import TYPES, VARS, WORDS, Exprs, Scope, _ind

CONSTRUCTS = {
    "core": "arithmetic, strings, containers (lists, dicts), subscripts, methods, f-strings, "
            "print",
    "branches": "if/elif/else, conditional expressions, and/or, chained comparisons",
    "loops": "for/while loops with break, continue, else and early return",
    "comprehensions": "list/set/dict comprehensions (nested, with conditions); generator "
                      "expressions passed to consumers (sum/any/all/list/sorted/join/max...) and "
                      "to an external that consumes them",
    "closures": "inner functions and lambdas (inlined or escaping), closures, nonlocal",
    "poppy_calls": "calls between @poppy functions (inlined; recursion; a callee mutating its "
                   "argument)",
    "externals": "externals of every class: @unordered, @readonly, @sequential, unannotated; "
                 "async def and blocking=True; all record their calls",
    "raising": "synchronous externals (plain and blocking) that raise for some arguments, and "
               "internal errors (IndexError, KeyError, ZeroDivisionError)",
    "raising_async": "async def externals (@unordered, @sequential) that raise for some "
                     "arguments",
    "nested_externals": "an unannotated helper that itself calls externals (an async one "
                        "included), called from the @poppy function",
    "mutation": "containers passed to externals or @poppy callees that mutate or read them; "
                "aliases",
    "global_rebind": "module globals (a counter, a config dict) read by the function and rebound "
                     "by a @sequential external, an unannotated helper, an async one, or a @poppy "
                     "callee with `global`; by the function itself; and between two calls",
    "nonlocal_rebind": "the @poppy function is a closure (made by a factory) whose free variable "
                       "a helper rebinds via nonlocal",
    "generators": "for over a generator whose body has side effects, over lazy map() of an "
                  "external, and over an iterator the loop shares with later code",
    "count": "for over itertools.count() with an early exit (break/return)",
    "iter_mutated": "for over a global list/dict that a helper called in the body mutates "
                    "(a worklist; a dict grown during iteration), and a local list passed to one",
    "unbound_reads": "reads of a local before it is bound: in a comprehension or lambda (a free "
                     "variable), after a branch that did not bind it",
    "exceptions": "try/except/else/finally, with, raise (issue 16; off by default)",
}
DEFAULT_CONSTRUCTS = tuple(c for c in CONSTRUCTS if c != "exceptions")

_CALLS_ASYNC = re.compile(r"\b(u_num|u_str|u_len|u_fail|ra_get|sa_put|sa_fail|n_via|pQQ_\w+|"
                          r"hQQ_\w+|bumpQQ|genQQ|g\d+)\(")


@dataclass
class Case:
    """One generated @poppy function with its support code; `QQ` is the case number."""
    support: list          # module-level blocks (text), in order
    function: str          # the @poppy def, or the factory that makes it
    driver: list           # module-level lines calling it (run_case(QQ, fQQ, ...))
    constructs: tuple      # the switches it was generated under

    def render(self, i: int) -> str:
        parts = [*self.support, self.function, "\n".join(self.driver)]
        return "\n\n".join(p.rstrip() for p in parts).replace("QQ", str(i)) + "\n"


HEADER = ("import asyncio\nimport contextlib\nimport itertools\nimport sys\n"
          "from poppy_jit.fuzz.prelude import *\n")


def program_text(cases: list, sleep: float = 1.0, numbers: list | None = None) -> str:
    """A program running `cases` one after another (case k numbered numbers[k], default k)."""
    numbers = numbers if numbers is not None else list(range(len(cases)))
    body = [f"# case {i}\n" + c.render(i) for i, c in zip(numbers, cases)]
    return HEADER + f"set_sleep({sleep!r})\n\n\n" + "\n\n".join(body)


class _Draw:
    """The generator's choices, read from a byte string Hypothesis drew (two bytes a choice;
    past its end every choice is the first option, so shorter strings give simpler cases and
    Hypothesis could shrink one). One opaque draw per case keeps Hypothesis' generate phase from
    splicing parts of earlier cases into new ones, which would make most cases near-copies."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def int(self, lo: int, hi: int) -> int:
        if hi <= lo:
            return lo
        chunk = self.data[self.pos:self.pos + 2]
        self.pos += 2
        if len(chunk) < 2:
            return lo
        return lo + int.from_bytes(chunk, "big") % (hi - lo + 1)

    def pick(self, seq):
        seq = list(seq)
        return seq[self.int(0, len(seq) - 1)]

    def chance(self, percent: int) -> bool:
        return self.int(0, 99) < percent

    def weighted(self, options: list):
        """options: [(weight, value)] with weight > 0."""
        options = [(w, v) for w, v in options if w > 0]
        total = sum(w for w, _ in options)
        k = self.int(0, total - 1)
        for w, v in options:
            if k < w:
                return v
            k -= w
        return options[-1][1]


class _Gen(Exprs):
    def __init__(self, r: _Draw, constructs) -> None:
        self.r = r
        self.cons = set(constructs)
        self.support: dict = {}      # name -> module-level code, in creation order
        self.main_globals: set = set()
        self.uid = 0
        self.budget = 0              # statements left for the whole function
        self.rebind_globals: list = []  # globals a driver may rebind between calls
        self.factory = None          # (free var, bump helper kind) when the function is a closure
        self.aliased: set = set()    # lists that were ever aliases of each other

    def on(self, c: str) -> bool:
        return c in self.cons

    def fresh(self, prefix: str) -> str:
        self.uid += 1
        return f"{prefix}{self.uid}"

    def need(self, name: str, code: str) -> str:
        if name not in self.support:
            self.support[name] = code
        return name

    # ------------------------------------------------------------------ literals and keys
    def block(self, sc: Scope, n: int) -> list:
        lines = []
        for _ in range(n):
            if sc.dead or self.budget <= 0:
                break
            self.budget -= 1
            lines += self.stmt(sc)
        if not lines:
            lines = ["pass"]
        return lines

    def stmt(self, sc: Scope) -> list:
        r, on = self.r, self.on
        deep = sc.depth < 3
        opts = [(6, "assign"), (3, "mutate"), (2, "print"), (1, "unpack")]
        if sc.kind == "main" and sc.depth == 0 and not sc.funcs and [
                v for v in sc.of("int") if v not in sc.frozen]:
            # of a variable no inner function captures, and not in a loop or a branch (where
            # it would be deleted twice, or read after the branch: an exception, not `core`)
            opts.append((1, "del"))
        if on("externals"):
            opts.append((4, "ext"))
        if on("branches") and deep:
            opts.append((3, "if"))
        if on("loops") and deep:
            opts += [(3, "for"), (1, "while")]
        if on("loops") and sc.depth > 0:
            opts.append((1, "return"))
        if sc.in_loop:
            opts.append((2, "jump"))
        if on("poppy_calls") and sc.kind != "helper":
            opts.append((1, "poppy"))
        if on("global_rebind") and sc.kind != "helper":
            opts.append((3, "global"))
        if self.factory and sc.kind == "main":
            opts.append((3, "bump"))
        if on("generators") and deep and sc.kind == "main":
            opts.append((2, "genloop"))
        if on("count") and deep and sc.kind == "main":
            opts.append((2, "count"))
        if on("iter_mutated") and deep and sc.kind == "main":
            opts.append((2, "itermut"))
        if on("mutation") and sc.kind != "helper":
            opts.append((2, "passmut"))
        if on("exceptions") and deep:
            opts.append((2, "try"))
        if on("unbound_reads") and sc.kind == "main":
            opts.append((1, "unbound"))
        kind = r.weighted(opts)
        return getattr(self, "s_" + kind)(sc)

    def s_assign(self, sc: Scope) -> list:
        t = self.r.pick(TYPES)
        if sc.kind == "helper":
            t = "int"
        names = [v for v in VARS[t] if v not in sc.frozen] if sc.kind != "helper" else ["z"]
        if sc.kind == "inner":
            names = [f"z{t[0]}"]
        if not names:
            t, names = "int", VARS["int"]
        name = self.r.pick(names)
        value = self.expr(t, sc, 2)
        sc.vars[name] = t
        return [f"{name} = {value}"]

    def s_mutate(self, sc: Scope) -> list:
        r = self.r
        ints = [v for v in sc.of("int") if v not in sc.frozen]
        opts = []
        if ints:
            opts.append("aug")
        if [v for v in sc.of("str") if v not in sc.frozen]:
            opts.append("saug")
        if self.mutable_list(sc):
            opts += ["append", "pop", "insert", "setitem", "extend"]
        dicts = [v for v in sc.of("dict") if v not in sc.frozen]
        if dicts:
            opts += ["dset", "dpop"]
        if not opts:
            return self.s_assign(sc)
        kind = r.pick(opts)
        if kind == "aug":
            return [f"{r.pick(ints)} {r.pick(['+=', '-=', '^=', '|='])} {self.int_expr(sc, 1)}"]
        if kind == "saug":
            v = r.pick([v for v in sc.of("str") if v not in sc.frozen])
            return [f"{v} = ({v} + {self.str_expr(sc, 1)})[-12:]"]
        if kind in ("append", "pop", "insert", "setitem", "extend"):
            lst = self.mutable_list(sc)
            if kind == "append":
                return [f"{lst}.append({self.int_expr(sc, 2)})"]
            if kind == "pop":
                return [f"if {lst}:", f"    {lst}.pop({r.pick(['', '0'])})"]
            if kind == "insert":
                return [f"{lst}.insert(0, {self.int_expr(sc, 1)})"]
            if kind == "extend":
                return [f"{lst}.extend({self.list_expr(sc, 1)})"]
            return [f"if {lst}:", f"    {lst}[{self.int_expr(sc, 1)} % len({lst})] = "
                                  f"{self.int_expr(sc, 1)}"]
        dct = r.pick(dicts)
        if kind == "dset":
            return [f"{dct}[{self.key(sc)}] = {self.int_expr(sc, 2)}"]
        return [f"{dct}.pop({self.key(sc)}, None)"]

    def s_unpack(self, sc: Scope) -> list:
        r = self.r
        if sc.kind != "main":
            return self.s_assign(sc)
        a, b = r.pick(VARS["int"]), r.pick(VARS["int"])
        if a == b or a in sc.frozen or b in sc.frozen:
            return self.s_assign(sc)
        if r.chance(50):
            value = f"{self.int_expr(sc, 1)}, {self.int_expr(sc, 1)}"
            sc.vars[a] = sc.vars[b] = "int"
            return [f"{a}, {b} = {value}"]
        rest = r.pick([v for v in VARS["list"] if v not in sc.frozen] or ["l9"])
        value = f"[{self.int_expr(sc, 1)}, {self.int_expr(sc, 1)}, {self.int_expr(sc, 0)}]"
        sc.vars[a], sc.vars[rest] = "int", "list"
        return [f"{a}, *{rest} = {value}"]

    def s_del(self, sc: Scope) -> list:
        name = self.r.pick([v for v in sc.of("int") if v not in sc.frozen])
        del sc.vars[name]
        return [f"del {name}"]

    def s_print(self, sc: Scope) -> list:
        t = self.r.pick(["int", "str", "int", "list"])
        items = [self.expr(t, sc, 1)]
        if self.r.chance(40):
            items.append(self.int_expr(sc, 1))
        return [f"print({', '.join(items)})"]

    def s_ext(self, sc: Scope) -> list:
        r = self.r
        k = r.int(0, 6)
        if k == 0:
            if r.chance(30):
                return [f"s_put({self.key(sc)}, v={self.int_expr(sc, 2)})"]
            if r.chance(20) and sc.of("list"):
                return [f"s_log(*{r.pick(sc.of('list'))})"]
            return [f"s_put({self.key(sc)}, {self.int_expr(sc, 2)})"]
        if k == 1:
            return [f"sa_put({self.key(sc)}, {self.int_expr(sc, 1)})"]
        if k == 2:
            return [f"sb_put({self.key(sc)}, {self.int_expr(sc, 1)})"]
        if k == 3:
            return [f"n_put({self.key(sc)}, {self.int_expr(sc, 1)})"]
        if k == 4:
            return [f"s_log({self.str_expr(sc, 1)}, {self.int_expr(sc, 1)})"]
        if k == 5:
            return [f"{r.pick(['u_num', 'ub_num'])}({self.int_expr(sc, 1)})"]
        name = "i" + str(r.int(0, 2)) if sc.kind != "helper" else "z"
        if sc.kind == "inner":
            name = "zi"
        value = self.ext_int(sc, 2)
        sc.vars[name] = "int"
        return [f"{name} = {value}"]

    def s_if(self, sc: Scope) -> list:
        r = self.r
        lines = [f"if {self.bool_expr(sc, 1)}:"]
        branches = []
        then = sc.child()
        lines += _ind(self.block(then, r.int(1, 3)))
        branches.append(then)
        for _ in range(r.int(0, 2) if r.chance(30) else 0):
            el = sc.child()
            lines.append(f"elif {self.bool_expr(sc, 1)}:")
            lines += _ind(self.block(el, r.int(1, 2)))
            branches.append(el)
        if r.chance(50):
            other = sc.child()
            lines.append("else:")
            lines += _ind(self.block(other, r.int(1, 2)))
            branches.append(other)
            live = [b for b in branches if not b.dead]
            if not live:
                sc.dead = True
            else:
                common = set.intersection(*(set(b.vars.items()) for b in live))
                sc.vars = dict(common)
        return lines

    def loop_body(self, sc: Scope, n: int, frozen=()) -> Scope:
        return sc.child(in_loop=True, frozen=sc.frozen | self.with_aliases(frozen))

    def with_aliases(self, names) -> frozenset:
        """`names` and every list ever aliased with one of them (`l1 = l0`)."""
        out = set(names)
        if self.aliased & out:
            out |= self.aliased
        return frozenset(out)

    def s_for(self, sc: Scope) -> list:
        r = self.r
        x = self.fresh("x")
        opts = ["range", "tuple", "str"]
        if sc.of("list"):
            opts += ["list", "list", "enumerate", "zip"]
        if sc.of("dict"):
            opts.append("items")
        kind = r.pick(opts)
        frozen = ()
        body_sc = self.loop_body(sc, 0)
        if kind == "range":
            head = f"for {x} in range({r.int(0, 4)}):"
            body_sc.vars[x] = "int"
        elif kind == "tuple":
            head = f"for {x} in ({', '.join(self.int_lit() for _ in range(r.int(1, 3)))},):"
            body_sc.vars[x] = "int"
        elif kind == "str":
            head = f"for {x} in {self.str_expr(sc, 1)}[:3]:"
            body_sc.vars[x] = "str"
        elif kind == "list":
            lst = r.pick(sc.of("list"))
            head = f"for {x} in {lst}:"
            frozen = (lst,)
            body_sc.vars[x] = "int"
        elif kind == "enumerate":
            lst = r.pick(sc.of("list"))
            j = self.fresh("j")
            head = f"for {j}, {x} in enumerate({lst}):"
            frozen = (lst,)
            body_sc.vars[x] = body_sc.vars[j] = "int"
        elif kind == "zip":
            a, b = r.pick(sc.of("list")), r.pick(sc.of("list"))
            y = self.fresh("x")
            head = f"for {x}, {y} in zip({a}, {b}):"
            frozen = (a, b)
            body_sc.vars[x] = body_sc.vars[y] = "int"
        else:
            dct = r.pick(sc.of("dict"))
            kk = self.fresh("k")
            head = f"for {kk}, {x} in {dct}.items():"
            frozen = (dct,)
            body_sc.vars[kk], body_sc.vars[x] = "str", "int"
        body_sc.frozen = body_sc.frozen | self.with_aliases(frozen)
        return self.finish_loop(sc, head, body_sc)

    def finish_loop(self, sc: Scope, head: str, body_sc: Scope, first: list = ()) -> list:
        r = self.r
        lines = [head] + _ind(list(first) + self.block(body_sc, r.int(1, 3)))
        if r.chance(25):
            else_sc = sc.child()
            lines += ["else:"] + _ind(self.block(else_sc, r.int(1, 2)))
        return lines

    def s_while(self, sc: Scope) -> list:
        r = self.r
        w = self.fresh("w")
        body_sc = self.loop_body(sc, 0, frozen=(w,))
        body_sc.vars[w] = "int"
        if r.chance(50):
            head = [f"{w} = 0", f"while {w} < {r.int(0, 4)}:"]
            first = [f"{w} += 1"]
        else:
            head = [f"{w} = 0", "while True:"]
            first = [f"{w} += 1", f"if {w} > {r.int(1, 4)}:", "    break"]
        lines = self.finish_loop(sc, head[1], body_sc, first)
        return [head[0]] + lines

    def s_return(self, sc: Scope) -> list:
        sc.dead = True
        if sc.kind == "main":
            return [f"return {self.final_value(sc)}"]
        return [f"return {self.int_expr(sc, 1)}"]

    def s_jump(self, sc: Scope) -> list:
        word = self.r.pick(["break", "continue"])
        if self.r.chance(60):
            return [f"if {self.bool_expr(sc, 1)}:", f"    {word}"]
        sc.dead = True
        return [word]

    def s_poppy(self, sc: Scope) -> list:
        name = self.r.pick(VARS["int"]) if sc.kind == "main" else "zi"
        call = self.poppy_call(sc, 2)
        sc.vars[name] = "int"
        return [f"{name} = {call}"]

    def s_global(self, sc: Scope) -> list:
        r = self.r
        k = r.int(0, 5)
        if k <= 2:
            return [self.global_helper_call(sc, 2)]
        if k == 3 and sc.kind == "main":
            self.use_global_int()
            self.main_globals.add("gQQ_a")
            return [f"gQQ_a = {self.int_expr(sc, 1)}"]
        name = r.pick(VARS["int"]) if sc.kind == "main" else "zi"
        value = f"{self.use_global_int()} + {self.int_expr(sc, 1)}"
        sc.vars[name] = "int"
        return [f"{name} = {value}"]

    def s_bump(self, sc: Scope) -> list:
        if self.factory[1] == "main":
            return [f"fv = {self.int_expr(sc, 1)}"]
        return [f"bumpQQ({self.int_expr(sc, 1)})"]

    def s_genloop(self, sc: Scope) -> list:
        r = self.r
        x = self.fresh("x")
        body_sc = self.loop_body(sc, 0)
        body_sc.vars[x] = "int"
        k = r.int(0, 6)
        if k >= 4:
            # the same worklists reached through enumerate, a comprehension, .items()
            self.need("gQQ_work", f"gQQ_work = [{r.int(0, 5)}, {r.int(0, 5)}]")
            self.need("gQQ_reg", "gQQ_reg = {'a': 1, 'b': 2}")
            deco = r.pick(["@sequential\n", ""])
            self.need("hQQ_more", f"{deco}def hQQ_more(x):\n    note('hQQ_more', x)\n"
                                  f"    if len(gQQ_work) < 6:\n        gQQ_work.append(x + 1)")
            self.need("hQQ_reg", f"{deco}def hQQ_reg(key):\n    note('hQQ_reg', key)\n"
                                 f"    gQQ_reg[key] = len(gQQ_reg)")
            if k == 4:
                body_sc.vars[x] = "int"
                return self.finish_loop(sc, f"for _, {x} in enumerate(gQQ_work):", body_sc,
                                        [f"hQQ_more({x})"])
            if k == 5:
                return [f"n_num(len([hQQ_more({x}) for {x} in gQQ_work]))"]
            body_sc.vars[x] = "str"
            return self.finish_loop(sc, f"for {x}, _ in gQQ_reg.items():", body_sc,
                                    [f"hQQ_reg({x} + 'x')"])
        if k == 0:
            self.need_gen()
            return self.finish_loop(sc, f"for {x} in genQQ({r.int(1, 4)}):", body_sc)
        if k == 1:
            self.need_gen()
            it = self.fresh("it")
            lines = [f"{it} = genQQ({r.int(2, 5)})"]
            lines += self.finish_loop(sc, f"for {x} in {it}:", body_sc,
                                      [f"if {x} > {r.int(0, 5)}:", "    break"])
            rest = r.pick(VARS["list"])
            sc.vars[rest] = "list"
            return lines + [f"{rest} = list({it})"]
        if k == 2:
            src = r.pick(sc.of("list")) if sc.of("list") else f"range({r.int(1, 4)})"
            body_sc.frozen = body_sc.frozen | self.with_aliases([src])
            fn = r.pick(["n_num", "u_num", "s_fail" if self.on("raising") else "n_num"])
            return self.finish_loop(sc, f"for {x} in map({fn}, {src}):", body_sc)
        src = r.pick(sc.of("list")) if sc.of("list") else f"range({r.int(1, 4)})"
        body_sc.frozen = body_sc.frozen | self.with_aliases([src])
        it = self.fresh("it")
        lines = [f"{it} = iter({src})"]
        lines += self.finish_loop(sc, f"for {x} in {it}:", body_sc,
                                  [f"if {x} % {r.int(2, 4)} == 0:", "    break"])
        name = r.pick(VARS["int"])
        sc.vars[name] = "int"
        return lines + [f"{name} = next({it}, -1)"]

    def s_count(self, sc: Scope) -> list:
        r = self.r
        x = self.fresh("x")
        body_sc = self.loop_body(sc, 0)
        body_sc.vars[x] = "int"
        start = r.int(0, 3)
        stop = start + r.int(0, 4)
        if r.chance(30) and sc.of("list"):
            j = self.fresh("j")
            body_sc.vars[j] = "int"
            lst = r.pick(sc.of("list"))
            body_sc.frozen = body_sc.frozen | self.with_aliases([lst])
            return self.finish_loop(sc, f"for {j}, {x} in zip(itertools.count({start}), "
                                        f"{lst}):", body_sc)
        exit_ = "break" if r.chance(60) else f"return {self.final_value(sc)}"
        return self.finish_loop(sc, f"for {x} in itertools.count({start}):", body_sc,
                                [f"if {x} >= {stop}:", f"    {exit_}"])

    def s_itermut(self, sc: Scope) -> list:
        r = self.r
        x = self.fresh("x")
        body_sc = self.loop_body(sc, 0)
        k = r.int(0, 3)
        if k == 0:
            self.need("gQQ_work", f"gQQ_work = [{r.int(0, 5)}, {r.int(0, 5)}]")
            deco = r.pick(["@sequential\n", ""])
            self.need("hQQ_more", f"{deco}def hQQ_more(x):\n    note('hQQ_more', x)\n"
                                  f"    if len(gQQ_work) < 6:\n        gQQ_work.append(x + 1)")
            body_sc.vars[x] = "int"
            return self.finish_loop(sc, f"for {x} in gQQ_work:", body_sc, [f"hQQ_more({x})"])
        if k == 1:
            self.need("gQQ_reg", "gQQ_reg = {'a': 1, 'b': 2}")
            deco = r.pick(["@sequential\n", ""])
            self.need("hQQ_reg", f"{deco}def hQQ_reg(key):\n    note('hQQ_reg', key)\n"
                                 f"    gQQ_reg[key] = len(gQQ_reg)")
            body_sc.vars[x] = "str"
            arg = r.pick([f"{x} + 'x'", x])
            return self.finish_loop(sc, f"for {x} in gQQ_reg:", body_sc, [f"hQQ_reg({arg})"])
        if k == 2 and self.on("poppy_calls"):
            self.need("gQQ_work", f"gQQ_work = [{r.int(0, 5)}, {r.int(0, 5)}]")
            self.need("pQQ_more", "@poppy\ndef pQQ_more(x):\n    if len(gQQ_work) < 6:\n"
                                  "        gQQ_work.append(x + 2)\n    return len(gQQ_work)")
            body_sc.vars[x] = "int"
            return self.finish_loop(sc, f"for {x} in gQQ_work:", body_sc, [f"pQQ_more({x})"])
        lst = self.mutable_list(sc)
        if lst is None:
            return self.s_assign(sc)
        body_sc.vars[x] = "int"
        body_sc.frozen = body_sc.frozen | self.with_aliases([lst])
        return self.finish_loop(sc, f"for {x} in {lst}:", body_sc,
                                [f"{r.pick(['s_grow', 'n_grow'])}({lst}, {x})"])

    def s_passmut(self, sc: Scope) -> list:
        r = self.r
        lst = self.mutable_list(sc)
        if lst is None:
            return self.s_assign(sc)
        k = r.int(0, 5)
        if k == 0:
            return [f"s_push({lst}, {self.int_expr(sc, 1)})"]
        if k == 1:
            return [f"n_push({lst}, {self.int_expr(sc, 1)})"]
        if k == 2 and self.poppy_push():
            return [f"pQQ_push({lst}, {self.int_expr(sc, 1)})"]
        if k == 3 and sc.kind == "main":
            other = [v for v in VARS["list"] if v != lst and v not in sc.frozen]
            if other:
                sc.vars[other[0]] = "list"
                self.aliased |= {lst, other[0]}
                return [f"{other[0]} = {lst}"]
        name = r.pick(VARS["int"]) if sc.kind == "main" else ("zi" if sc.kind == "inner" else "z")
        sc.vars[name] = "int"
        return [f"{name} = {r.pick(['u_len', 'r_sum'])}({lst})"]

    def s_unbound(self, sc: Scope) -> list:
        """A read of a local that may not be bound yet (CPython raises UnboundLocalError, or
        NameError for a free variable of a comprehension or lambda)."""
        r = self.r
        u = self.fresh("u")
        k = r.int(0, 2)
        if k == 0:
            fn = r.pick(["sum", "max", "list"])
            tail = ", default=0" if fn == "max" else ""
            return [f"{u} = {fn}(({u} for q in range(n % 2)){tail})", f"print({u})"]
        if k == 1:
            return [f"if {self.bool_expr(sc, 1)}:", f"    {u} = {self.int_expr(sc, 1)}",
                    f"print({u})"]
        return [f"{u}_f = lambda: {u}", f"print({u}_f() if n % 2 else 0)",
                f"{u} = {self.int_expr(sc, 1)}"]

    def s_try(self, sc: Scope) -> list:
        r = self.r
        if r.chance(25):
            exc = r.pick(["ValueError", "KeyError", "RuntimeError", "ZeroDivisionError"])
            body = sc.child()
            if r.chance(50):
                head = f"with contextlib.suppress({exc}):"
            else:
                # A manager of the prelude: its entry and exit are sequential calls.
                tag = self.fresh("w")
                head = f"with Managed({tag!r}, {exc if r.chance(50) else '()'})" + (f" as {tag}:" if r.chance(50) else ":")
            return [head] + _ind(self.block(body, r.int(1, 3)))
        body = sc.child()
        lines = ["try:"] + _ind(self.block(body, r.int(1, 3)))
        if r.chance(30):
            lines += _ind([f"if {self.bool_expr(body, 0)}:",
                           f"    raise ValueError('raised ' + {self.str_expr(body, 0)})"])
        handlers = r.int(0, 2) if r.chance(80) else 0
        for _ in range(handlers or 1 if not r.chance(20) else 0):
            exc = r.pick(["ValueError", "(KeyError, IndexError)", "RuntimeError", "Exception",
                          "ZeroDivisionError", "BaseException"])
            lines += [f"except {exc} as e:",
                      "    print('caught', type(e).__name__, e)"]
            h = sc.child()
            lines += _ind(self.block(h, r.int(0, 1))) if r.chance(40) else []
            if r.chance(15):
                # A bare `raise`: the handled exception again, as it is.
                lines += _ind([f"if {self.bool_expr(h, 0)}:", "    raise"])
        if r.chance(20):
            # A bare handler (last): it catches everything, whatever the handlers before it.
            lines += ["except:", "    print('caught bare')"]
            lines += _ind(self.block(sc.child(), r.int(0, 1))) if r.chance(40) else []
        if r.chance(30):
            lines += ["finally:"] + _ind(self.block(sc.child(), 1))
        if not any(ln.startswith(("except", "finally")) for ln in lines):
            # A plain try/finally: its clause sees the pending exception, if any.
            lines += ["finally:", "    print('finally', type(sys.exc_info()[1]).__name__)"
                      if r.chance(50) else "    print('finally')"]
        return lines

    # ------------------------------------------------------------------ the function
    def final_value(self, sc: Scope) -> str:
        names = [v for v in sorted(sc.vars) if v[0] in "itld" and v[1:].isdigit()]
        extra = []
        if "gQQ_a" in self.support and self.r.chance(50):
            extra.append("gQQ_a")
        if self.factory and self.r.chance(60):
            extra.append("fv")
        return "(" + ", ".join(names + extra) + ",)" if names or extra else "None"

    def may_run_in_cpython(self, code: str) -> bool:
        """Whether `code` may be run by CPython inside a call the run makes (an escaping inner
        function, a generator expression an external consumes): not if it calls an async
        external or @poppy code, unless `nested_externals` (a known gap) is on."""
        return self.on("nested_externals") or not _CALLS_ASYNC.search(code)

    @staticmethod
    def inner_scope(sc: Scope) -> Scope:
        """An inner function's scope: it reads the enclosing variables (late binding) and does
        neither rebinds them (no nonlocal: its own locals are z*) nor mutates the enclosing
        containers (a loop over one calling it could never end)."""
        return Scope({**sc.vars, "a": "int"}, kind="inner", frozen=frozenset(sc.vars))

    def inner_functions(self, sc: Scope) -> list:
        r = self.r
        lines = []
        for _ in range(r.int(1, 3)):
            k = r.int(0, 3)
            name = self.fresh("g")
            if k == 0:   # def reading enclosing variables (late binding)
                isc = self.inner_scope(sc)
                body = self.block(isc, r.int(0, 2)) if r.chance(50) else []
                ret = f"return {self.int_expr(isc, 2)}" if not isc.dead else None
                text = [f"def {name}(a):", *_ind([*body, *([ret] if ret else [])] or ["pass"])]
                lines += text
                sc.funcs.append((name, "def", "\n".join(text)))
            elif k == 1:  # lambda
                isc = self.inner_scope(sc)
                lines.append(f"{name} = lambda a: {self.int_expr(isc, 1)}")
                sc.funcs.append((name, "lambda", lines[-1]))
            else:         # nonlocal counter
                cnt = r.pick([v for v in VARS["int"]])
                if cnt not in sc.vars:
                    lines.append(f"{cnt} = {self.int_lit()}")
                    sc.vars[cnt] = "int"
                isc = self.inner_scope(sc)
                extra = []
                if r.chance(50) and self.on("externals"):
                    extra = [f"s_log('{name}', {cnt})"]
                text = [f"def {name}(a):", f"    nonlocal {cnt}", *_ind(extra),
                        f"    {cnt} += a", f"    return {cnt}"]
                lines += text
                sc.funcs.append((name, "nonlocal", "\n".join(text)))
        return lines

    def function(self) -> tuple:
        r = self.r
        self.budget = r.int(4, 14)
        if self.on("nonlocal_rebind") and r.chance(35):
            self.factory = ("fv", r.pick(["seq", "plain", "async", "poppy", "main"]))
        sc = Scope({"n": "int", "s": "str", "xs": "list"})
        pre = []
        for t in TYPES:
            if r.chance(60):
                name = r.pick(VARS[t])
                pre.append(f"{name} = {self.expr(t, sc, 1)}")
                sc.vars[name] = t
        if self.on("closures") and r.chance(60):
            pre += self.inner_functions(sc)
        body = self.block(sc, self.budget)
        if not sc.dead:
            body.append(f"return {self.final_value(sc)}")
        decl = [f"global {', '.join(sorted(self.main_globals))}"] if self.main_globals else []
        nonl = []
        if self.factory and (self.factory[1] == "main" or any("fv =" in ln for ln in body)):
            nonl = ["nonlocal fv"]
        fn = ["@poppy", "def fQQ(n, s, xs):", *_ind(decl + nonl + pre + body)]
        if self.factory:
            fn = self.wrap_factory(fn)
        return "\n".join(fn)

    def wrap_factory(self, fn: list) -> list:
        kind = self.factory[1]
        helper = {
            "seq": ["@sequential", "def bumpQQ(k):", "    nonlocal fv", "    note('bumpQQ', k)",
                    "    fv += k"],
            "plain": ["def bumpQQ(k):", "    nonlocal fv", "    note('bumpQQ', k)",
                      "    fv = fv * 3 % 41 + k"],
            "async": ["@sequential", "async def bumpQQ(k):", "    nonlocal fv",
                      "    note('bumpQQ', k)", "    await asyncio.sleep(0.001)", "    fv -= k"],
            "poppy": ["@poppy", "def bumpQQ(k):", "    nonlocal fv", "    fv += k",
                      "    return fv"],
            "main": [],
        }[kind]
        return ["def makeQQ():", f"    fv = {self.int_lit()}", *_ind(helper), *_ind(fn),
                "    return fQQ", "", "", "fQQ = makeQQ()"]

    def driver(self) -> list:
        r = self.r
        args = (f"{r.int(0, 6)}, {self.str_lit()}, "
                f"[{', '.join(str(r.int(0, 9)) for _ in range(r.int(0, 4)))}]")
        lines = [f"run_case(QQ, fQQ, {args})"]
        if self.rebind_globals and r.chance(60):
            g = r.pick(self.rebind_globals)
            value = self.int_lit() if g == "gQQ_a" else f'{{"mode": {self.str_lit()}}}'
            lines += [f"{g} = {value}", f"run_case(QQ, fQQ, {args})"]
        elif r.chance(15):
            lines.append(f"run_case(QQ, fQQ, {args})")
        return lines


CHOICE_BYTES = 4096


def build_case(data: bytes, constructs=DEFAULT_CONSTRUCTS) -> Case:
    """The case the choices in `data` make under `constructs` (deterministic)."""
    g = _Gen(_Draw(data), constructs)
    fn = g.function()
    driver = g.driver()
    support = [c for c in g.support.values() if c]
    return Case(support, fn, driver, tuple(sorted(constructs)))


def cases_strategy(constructs=DEFAULT_CONSTRUCTS):
    """A Hypothesis strategy of Cases."""
    from .hyp import strategies as st
    constructs = tuple(constructs)
    return st.binary(min_size=CHOICE_BYTES, max_size=CHOICE_BYTES).map(
        lambda data: build_case(data, constructs))


def generate(n: int, seed: int, constructs=DEFAULT_CONSTRUCTS) -> list:
    """n cases drawn by Hypothesis, the same for the same (n, seed, constructs, Hypothesis
    version)."""
    from .hyp import HealthCheck, Phase, given, settings
    from .hyp import seed as hseed

    out: list = []
    strategy = cases_strategy(constructs)

    @hseed(seed)
    @settings(max_examples=n, database=None, phases=[Phase.generate], deadline=None,
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(strategy)
    def collect(case):
        out.append(case)

    # Hypothesis repeats itself (it mutates earlier examples): keep distinct cases only, and
    # draw again with derived seeds until there are n (or nothing new comes).
    seen: set = set()
    unique: list = []
    for extra in range(50):
        out.clear()
        hseed(seed * 1000 + extra if extra else seed)(collect)()
        before = len(unique)
        for case in out:
            key = case.render(0)
            if key not in seen:
                seen.add(key)
                unique.append(case)
        if len(unique) >= n or len(unique) == before:
            break
    return unique[:n]
