"""Expressions of generated @poppy functions, by type (ints, strs, lists of ints, dicts
str->int), and the scope they are drawn in. A mixin of `gen._Gen`: it reads its choices
(`self.r`), switches (`self.on`) and fresh names from there."""
from __future__ import annotations

from dataclasses import dataclass, field

WORDS = ["ash", "bay", "cove", "dune", "elm", "fern", "gale", "hill"]
TYPES = ("int", "str", "list", "dict")
VARS = {"int": ["i0", "i1", "i2"], "str": ["t0", "t1"], "list": ["l0", "l1"], "dict": ["d0"]}


@dataclass
class Scope:
    vars: dict                       # name -> type, definitely bound here
    kind: str = "main"               # main | inner | helper
    in_loop: bool = False
    frozen: frozenset = frozenset()  # containers a loop iterates: not mutated in its body
    depth: int = 0
    funcs: list = field(default_factory=list)   # inner functions: (name, kind, source)
    dead: bool = False               # the block ended with return/break/continue

    def child(self, **kw) -> "Scope":
        sc = Scope(dict(self.vars), self.kind, self.in_loop, self.frozen, self.depth + 1,
                   list(self.funcs))
        for k, v in kw.items():
            setattr(sc, k, v)
        return sc

    def of(self, t: str) -> list:
        return sorted(n for n, ty in self.vars.items() if ty == t)


def _ind(lines: list, n: int = 1) -> list:
    return ["    " * n + ln if ln else ln for ln in lines]


class Exprs:
    """The expression half of the generator (see `gen._Gen`)."""

    def int_lit(self) -> str:
        return str(self.r.int(-2, 12))

    def str_lit(self) -> str:
        return repr(self.r.pick(WORDS + [""]))

    def key(self, sc: Scope) -> str:
        if self.r.chance(70):
            return repr(f"k{self.r.int(0, 3)}")
        return self.str_expr(sc, 0)

    # ------------------------------------------------------------------ expressions
    def expr(self, t: str, sc: Scope, d: int) -> str:
        return {"int": self.int_expr, "str": self.str_expr, "list": self.list_expr,
                "dict": self.dict_expr, "bool": self.bool_expr}[t](sc, d)

    def int_expr(self, sc: Scope, d: int = 2) -> str:
        r, on = self.r, self.on
        ints = sc.of("int")
        seqs = sc.of("list") + sc.of("str") + sc.of("dict")
        opts = [(3, "lit")]
        if ints:
            opts.append((6, "var"))
        if seqs:
            opts.append((2, "len"))
        if on("global_rebind"):
            opts.append((3, "global"))
        if self.factory and sc.kind != "helper":
            opts.append((4, "free"))
        if d > 0:
            opts += [(5, "binop"), (1, "unary")]
            if on("externals"):
                opts.append((6, "ext"))
            if on("branches"):
                opts.append((1, "ifexp"))
            if sc.of("list"):
                opts.append((2, "index"))
            if sc.of("dict"):
                opts.append((1, "dget"))
            if on("comprehensions"):
                opts.append((2, "genexpr"))
            if on("poppy_calls") and sc.kind != "helper":
                opts.append((2, "poppy"))
            if sc.funcs:
                opts.append((4, "inner"))
            if on("raising") or on("raising_async"):
                opts.append((1, "raise"))
            if on("nested_externals"):
                opts.append((2, "via"))
            if on("mutation") and sc.of("list"):
                opts.append((1, "mutext"))
            if on("global_rebind") and sc.kind == "main":
                opts.append((1, "pgcall"))
            if self.factory and self.factory[1] != "main" and sc.kind == "main":
                opts.append((1, "bumpcall"))
        kind = r.weighted(opts)
        sub = lambda: self.int_expr(sc, d - 1)  # noqa: E731
        if kind == "lit":
            return self.int_lit()
        if kind == "var":
            return r.pick(ints)
        if kind == "len":
            return f"len({r.pick(seqs)})"
        if kind == "global":
            return self.use_global_int()
        if kind == "free":
            return "fv"
        if kind == "binop":
            op = r.pick(["+", "-", "*", "//", "%", "min", "max", "&", "^", "**"])
            if op == "**":
                return f"({sub()} ** {r.int(0, 3)} % 101)"
            if op in ("min", "max"):
                return f"{op}({sub()}, {sub()})"
            if op in ("//", "%"):
                return f"({sub()} {op} {r.int(1, 5)})"
            if op == "*":
                return f"({sub()} * {sub()} % 97)"
            return f"({sub()} {op} {sub()})"
        if kind == "unary":
            return r.pick([f"abs({sub()})", f"(-{sub()})", f"int({self.str_expr(sc, 0)} == 'ash')"])
        if kind == "ext":
            return self.ext_int(sc, d)
        if kind == "ifexp":
            return f"({sub()} if {self.bool_expr(sc, d - 1)} else {sub()})"
        if kind == "index":
            lst = r.pick(sc.of("list"))
            return f"({lst}[{sub()} % len({lst})] if {lst} else {self.int_lit()})"
        if kind == "dget":
            dct = r.pick(sc.of("dict"))
            return r.pick([f"{dct}.get({self.key(sc)}, {self.int_lit()})",
                           f"len({dct}.keys())", f"sum({dct}.values())",
                           f"len([k for k, v in {dct}.items() if v > {self.int_lit()}])"])
        if kind == "genexpr":
            return self.genexpr_int(sc, d)
        if kind == "poppy":
            return self.poppy_call(sc, d)
        if kind == "inner":
            name = r.pick(sc.funcs)[0]
            return f"{name}({sub()})"
        if kind == "raise":
            return self.raising_int(sc, d)
        if kind == "via":
            return f"n_via({sub()})"
        if kind == "mutext":
            lst = self.mutable_list(sc)
            if lst is None:
                return self.int_lit()
            return r.pick([f"u_len({lst})", f"r_sum({lst})", f"s_push({lst}, {sub()})"]
                          + ([f"pQQ_push({lst}, {sub()})"] if self.poppy_push() else []))
        if kind == "pgcall":
            return self.global_helper_call(sc, d, as_expr=True)
        if kind == "bumpcall":
            return f"bumpQQ({sub()})" if self.factory[1] == "poppy" else (
                f"(bumpQQ({sub()}) or fv)")
        raise AssertionError(kind)

    def ext_int(self, sc: Scope, d: int) -> str:
        r = self.r
        name = r.weighted([(4, "u_num"), (2, "ub_num"), (2, "us_num"), (3, "r_get"),
                           (1, "ra_get"), (1, "rb_get"), (2, "n_num"), (1, "s_tick")])
        if name in ("r_get", "ra_get", "rb_get"):
            return f"{name}({self.key(sc)})"
        if name == "s_tick":
            return "s_tick()"
        return f"{name}({self.int_expr(sc, d - 1)})"

    def raising_int(self, sc: Scope, d: int) -> str:
        r = self.r
        if not self.on("raising"):
            k = 0
        elif not self.on("raising_async"):
            k = r.int(1, 6)
        else:
            k = r.int(0, 6)
        if k == 0:
            return f"{r.pick(['u_fail', 'sa_fail'])}({self.int_expr(sc, d - 1)})"
        if k == 6:
            return f"ub_fail({self.int_expr(sc, d - 1)})"
        if k == 1:
            return f"s_fail({self.int_expr(sc, d - 1)})"
        if k == 2:
            return f"r_fail({self.key(sc)})"
        if k == 3 and sc.of("list"):
            return f"{r.pick(sc.of('list'))}[{self.int_expr(sc, d - 1)}]"
        if k == 4 and sc.of("dict"):
            return f"{r.pick(sc.of('dict'))}[{self.key(sc)}]"
        return f"(100 // ({self.int_expr(sc, d - 1)} % 3))"

    def str_expr(self, sc: Scope, d: int = 2) -> str:
        r = self.r
        strs = sc.of("str")
        opts = [(3, "lit")]
        if strs:
            opts.append((5, "var"))
        if self.on("global_rebind"):
            opts.append((1, "cfg"))
        if d > 0:
            opts += [(2, "concat"), (3, "fstr"), (2, "str"), (1, "method")]
            if self.on("externals"):
                opts.append((3, "ext"))
            if self.on("comprehensions"):
                opts.append((2, "join"))
            if self.on("branches"):
                opts.append((1, "ifexp"))
        kind = r.weighted(opts)
        if kind == "lit":
            return self.str_lit()
        if kind == "var":
            return r.pick(strs)
        if kind == "cfg":
            self.need_global_cfg()
            return 'gQQ_cfg["mode"]'
        if kind == "concat":
            return f"({self.str_expr(sc, d - 1)} + {self.str_expr(sc, d - 1)})[:12]"
        if kind == "fstr":
            a, b = self.int_expr(sc, d - 1), self.str_expr(sc, d - 1)
            if '"' in a + b or "{" in a + b or "\\" in a + b:
                return f"(str({a}) + '-' + {b})"
            return f'f"{{{a}}}-{{{b}}}"'
        if kind == "str":
            return f"str({self.int_expr(sc, d - 1)})"
        if kind == "method":
            return f"{self.str_expr(sc, d - 1)}.{r.pick(['upper()', 'strip()', 'title()'])}"
        if kind == "ext":
            return f"u_str({self.int_expr(sc, d - 1)})"
        if kind == "join":
            v = self.fresh("q")
            it, sc2 = self.iterable_int(sc, v)
            return f'"-".join(str({self.int_expr(sc2, d - 1)}) for {v} in {it})'
        if kind == "ifexp":
            return (f"({self.str_expr(sc, d - 1)} if {self.bool_expr(sc, d - 1)} "
                    f"else {self.str_expr(sc, d - 1)})")
        raise AssertionError(kind)

    def list_expr(self, sc: Scope, d: int = 2) -> str:
        r = self.r
        opts = [(3, "display")]
        if sc.of("list"):
            opts += [(2, "copy"), (1, "slice"), (1, "sorted")]
        if d > 0 and self.on("comprehensions"):
            opts += [(4, "comp"), (1, "nested"), (1, "setcomp"), (1, "consumer")]
        if d > 0 and self.on("closures") and sc.of("list"):
            opts += [(1, "escape")]
        kind = r.weighted(opts)
        if kind == "display":
            return "[" + ", ".join(self.int_expr(sc, d - 1) for _ in range(r.int(0, 3))) + "]"
        if kind == "copy":
            return f"list({r.pick(sc.of('list'))})"
        if kind == "slice":
            return f"{r.pick(sc.of('list'))}[{r.int(0, 2)}:{r.int(2, 5)}]"
        if kind == "sorted":
            return f"sorted({r.pick(sc.of('list'))}, reverse={r.pick(['True', 'False'])})"
        if kind == "comp":
            v = self.fresh("q")
            it, sc2 = self.iterable_int(sc, v)
            cond = f" if {self.bool_expr(sc2, 1)}" if r.chance(40) else ""
            return f"[{self.int_expr(sc2, d - 1)} for {v} in {it}{cond}]"
        if kind == "nested":
            v, w = self.fresh("q"), self.fresh("q")
            it, sc2 = self.iterable_int(sc, v)
            it2, sc3 = self.iterable_int(sc2, w)
            return f"[{self.int_expr(sc3, d - 1)} for {v} in {it} for {w} in {it2}]"
        if kind == "setcomp":
            v = self.fresh("q")
            it, sc2 = self.iterable_int(sc, v)
            return f"sorted({{{self.int_expr(sc2, d - 1)} % 5 for {v} in {it}}})"
        if kind == "consumer":
            v = self.fresh("q")
            it, sc2 = self.iterable_int(sc, v)
            fn = r.pick(["list", "sorted", "s_consume"])
            elem = self.int_expr(sc2, d - 1)
            if fn == "s_consume" and not self.may_run_in_cpython(elem + it):
                fn = "list"
            return f"{fn}({elem} for {v} in {it})"
        if kind == "escape":
            lst = r.pick(sc.of("list"))
            escapable = [f for f in sc.funcs if self.may_run_in_cpython(f[2])]
            if escapable and r.chance(50):
                name = r.pick(escapable)[0]
                return f"list(map({name}, {lst}))"
            x = self.fresh("a")
            return f"sorted({lst}, key=lambda {x}: ({x} * {r.int(2, 7)}) % {r.int(3, 9)})"
        raise AssertionError(kind)

    def dict_expr(self, sc: Scope, d: int = 2) -> str:
        r = self.r
        if d > 0 and self.on("comprehensions") and r.chance(50):
            v = self.fresh("q")
            it, sc2 = self.iterable_int(sc, v)
            return f"{{str({v}): {self.int_expr(sc2, d - 1)} for {v} in {it}}}"
        if sc.of("dict") and r.chance(30):
            return f"dict({r.pick(sc.of('dict'))})"
        items = [f"{self.key(sc)}: {self.int_expr(sc, d - 1)}" for _ in range(r.int(0, 3))]
        return "{" + ", ".join(items) + "}"

    def bool_expr(self, sc: Scope, d: int = 1) -> str:
        r = self.r
        opts = [(5, "cmp"), (1, "in"), (1, "is")]
        if self.on("branches"):
            opts += [(2, "chain"), (2, "andor"), (1, "not")]
        if d > 0 and self.on("comprehensions"):
            opts.append((1, "anyall"))
        kind = r.weighted(opts)
        i = lambda: self.int_expr(sc, max(d - 1, 0) if r.chance(60) else d)  # noqa: E731
        if kind == "cmp":
            return f"{i()} {r.pick(['<', '<=', '==', '!=', '>', '>='])} {i()}"
        if kind == "in":
            if sc.of("list"):
                return f"{i()} in {r.pick(sc.of('list'))}"
            return f"{self.str_expr(sc, 0)} in {self.str_expr(sc, 0)}"
        if kind == "is":
            if sc.of("list") and r.chance(50):
                return f"{r.pick(sc.of('list'))} {r.pick(['is', 'is not'])} " \
                       f"{r.pick(sc.of('list'))}"
            return f"{self.str_expr(sc, 0)} not in {self.str_expr(sc, 1)}"
        if kind == "chain":
            return f"{i()} < {i()} <= {i()}"
        if kind == "andor":
            return f"({self.bool_expr(sc, d - 1)} {r.pick(['and', 'or'])} " \
                   f"{self.bool_expr(sc, d - 1)})"
        if kind == "not":
            return f"not {self.bool_expr(sc, d - 1)}"
        if kind == "anyall":
            v = self.fresh("q")
            it, sc2 = self.iterable_int(sc, v)
            return f"{r.pick(['any', 'all'])}({self.bool_expr(sc2, 0)} for {v} in {it})"
        raise AssertionError(kind)

    def genexpr_int(self, sc: Scope, d: int) -> str:
        r = self.r
        v = self.fresh("q")
        it, sc2 = self.iterable_int(sc, v)
        body = self.int_expr(sc2, d - 1)
        k = r.int(0, 3)
        if k == 0:
            return f"sum({body} for {v} in {it})"
        if k == 1:
            return f"max(({body} for {v} in {it}), default={self.int_lit()})"
        if k == 2:
            return f"len([{body} for {v} in {it} if {self.bool_expr(sc2, 0)}])"
        return f"sum({{{v}: {body} for {v} in {it}}}.values())"

    def iterable_int(self, sc: Scope, var: str):
        """A finite iterable of ints and the scope binding `var` to its items."""
        r = self.r
        opts = [(3, "range"), (1, "tuple")]
        if sc.of("list"):
            opts.append((4, "list"))
        if self.on("generators") and sc.kind != "helper":
            opts.append((1, "gen"))
        kind = r.weighted(opts)
        sc2 = sc.child()
        sc2.vars[var] = "int"
        if kind == "range":
            return (f"range({r.int(0, 4)})" if r.chance(60)
                    else f"range({self.int_expr(sc, 1)} % 4)"), sc2
        if kind == "tuple":
            return "(" + ", ".join(self.int_lit() for _ in range(r.int(1, 3))) + ",)", sc2
        if kind == "gen":
            self.need_gen()
            return f"genQQ({r.int(0, 4)})", sc2
        lst = r.pick(sc.of("list"))
        sc2.frozen = sc2.frozen | self.with_aliases([lst])
        return lst, sc2

    # ------------------------------------------------------------------ support code
    def use_global_int(self) -> str:
        self.need("gQQ_a", f"gQQ_a = {self.int_lit()}")
        if "gQQ_a" not in self.rebind_globals:
            self.rebind_globals.append("gQQ_a")
        return "gQQ_a"

    def need_global_cfg(self) -> None:
        self.need("gQQ_cfg", f'gQQ_cfg = {{"mode": {self.str_lit()}}}')
        if "gQQ_cfg" not in self.rebind_globals:
            self.rebind_globals.append("gQQ_cfg")

    def global_helper_call(self, sc: Scope, d: int, as_expr: bool = False) -> str:
        """A call of a helper that rebinds gQQ_a or gQQ_cfg."""
        r = self.r
        self.use_global_int()
        flavour = r.pick(["seq", "plain", "async", "poppy", "cfg"] if not as_expr else ["poppy"])
        arg = self.int_expr(sc, max(d - 1, 0))
        if flavour == "seq":
            self.need("hQQ_sg", "@sequential\ndef hQQ_sg(k):\n    global gQQ_a\n"
                                "    note('hQQ_sg', k)\n    gQQ_a += k")
            return f"hQQ_sg({arg})"
        if flavour == "plain":
            self.need("hQQ_ng", "def hQQ_ng(k):\n    global gQQ_a\n    note('hQQ_ng', k)\n"
                                "    gQQ_a = gQQ_a * 2 % 50 + k")
            return f"hQQ_ng({arg})"
        if flavour == "async":
            self.need("hQQ_ag", "@sequential\nasync def hQQ_ag(k):\n    global gQQ_a\n"
                                "    note('hQQ_ag', k)\n    await asyncio.sleep(0.001)\n"
                                "    gQQ_a -= k")
            return f"hQQ_ag({arg})"
        if flavour == "poppy":
            self.need("hQQ_pg", "@poppy\ndef hQQ_pg(k):\n    global gQQ_a\n"
                                "    gQQ_a = gQQ_a + k\n    return gQQ_a")
            return f"hQQ_pg({arg})"
        self.need_global_cfg()
        self.need("hQQ_cfg", "def hQQ_cfg(m):\n    global gQQ_cfg\n    note('hQQ_cfg', m)\n"
                             "    gQQ_cfg = {'mode': m}")
        return f"hQQ_cfg({self.str_expr(sc, max(d - 1, 0))})"

    def poppy_call(self, sc: Scope, d: int) -> str:
        r = self.r
        k = r.int(0, 4)
        if k == 4:
            self.need("pQQ_rec", "@poppy\ndef pQQ_rec(k):\n    if k <= 0:\n        return 0\n"
                                 "    return u_num(k) % 7 + pQQ_rec(k - 1)")
            return f"pQQ_rec({r.int(0, 3)})"
        name = f"pQQ_{k}"
        if name not in self.support:
            self.support[name] = None  # reserve (a helper does not call itself)
            hs = Scope({"x": "int", "y": "str"}, kind="helper")
            body = self.block(hs, r.int(1, 3))
            if not hs.dead:
                body.append(f"return {self.int_expr(hs, 2)}")
            self.support[name] = "\n".join([f"@poppy", f"def {name}(x, y):", *_ind(body)])
        return f"{name}({self.int_expr(sc, d - 1)}, {self.str_expr(sc, 0)})"

    def poppy_push(self) -> bool:
        if not self.on("poppy_calls"):
            return False
        self.need("pQQ_push", "@poppy\ndef pQQ_push(c, v):\n    c.append(v)\n    return len(c)")
        return True

    def need_gen(self) -> None:
        if "genQQ" in self.support:
            return
        effect = self.r.pick(["s_log('genQQ', j)", "print('gen', j)", "u_num(j)",
                              "n_put('k0', j)", "pass"])
        self.need("genQQ", f"def genQQ(k):\n    for j in range(k):\n        {effect}\n"
                           f"        yield j * 3 % 7")

    # ------------------------------------------------------------------ statements
    def mutable_list(self, sc: Scope):
        lists = [v for v in sc.of("list") if v not in sc.frozen]
        return self.r.pick(lists) if lists else None
