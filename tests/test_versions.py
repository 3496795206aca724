"""The CPython versions poppy_jit builds for (docs/versions.md): on each, the package installs and
imports; where the compiled path is not supported yet, every @poppy function runs in plain CPython
with a fallback reason naming the version and the function's line, and the program's result is
CPython's. Runs on every version scripts/test.sh tests."""
import dis
import sys
import textwrap

import pytest

from poppy_jit import _prologue
from subproc import run_file

_core = pytest.importorskip("poppy_jit._core")
VERSION = sys.version_info[:2]
COMPILED = VERSION in _prologue.COMPILED_VERSIONS

PROGRAM = textwrap.dedent("""\
    import poppy_jit
    from poppy_jit import poppy, unordered, sequential

    @unordered
    def llm(x):
        return x * 2

    @sequential
    def log(s):
        print("log", s)

    @poppy
    def main(n):
        out = [llm(i) for i in range(n)]
        total = 0
        for v in out:
            total += v
        log(total)
        return out, {k: v for k, v in zip("abc", out)}

    print(main(4))
    if poppy_jit.is_enabled():
        for fb in poppy_jit.stats()["fallbacks"]:
            print("fallback", fb["function"], fb["reason"])
    """)


def test_supported_version():
    assert (3, 11) <= VERSION <= (3, 13)
    assert (3, 11) in _prologue.COMPILED_VERSIONS


def test_program_runs_as_cpython_does(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(PROGRAM)
    plain, popped = run_file(path, poppy=False), run_file(path, poppy=True)
    assert plain.returncode == 0 and popped.returncode == 0, popped.stderr
    expected = "log 12\n([0, 2, 4, 6], {'a': 0, 'b': 2, 'c': 4})\n"
    assert plain.stdout == expected
    if COMPILED:
        assert popped.stdout == expected
    else:
        reason = f"CPython {VERSION[0]}.{VERSION[1]}: compiled path not supported yet at line 12"
        assert popped.stdout == expected + f"fallback main {reason}\n"


def test_explain_names_the_version():
    def f(x):
        return x + 1

    explained = _core.explain(f)
    if COMPILED:
        assert explained["fallback"] is None and explained["bezoar"]
    else:
        assert explained["fallback"] == (f"CPython {VERSION[0]}.{VERSION[1]}: compiled path not "
                                         f"supported yet at line {f.__code__.co_firstlineno}")
        assert explained["bezoar"] is None


def test_no_prologue_where_not_compiled():
    def f():
        return 1

    why = _prologue.ineligible(f.__code__)
    if COMPILED:
        assert why is None
    else:
        assert why.startswith(f"CPython {VERSION[0]}.{VERSION[1]}: compiled path not supported yet")


def _await_loop(code):
    """The opnames of the first await loop of `code`, SEND through the instruction it exits to,
    and the exception-table entry over its YIELD_VALUE as (target opname, depth) or None."""
    ins = list(dis.get_instructions(code))
    s = next(k for k, i in enumerate(ins) if i.opname == "SEND")
    out = next(k for k, i in enumerate(ins) if i.offset == ins[s].argval)
    y = ins[s + 1]
    assert y.opname == "YIELD_VALUE"
    entry = next(((e.target, e.depth) for e in dis.Bytecode(code).exception_entries
                  if e.start <= y.offset < e.end), None)
    handler = entry and (next(i.opname for i in ins if i.offset == entry[0]), entry[1])
    return [(i.opname, i.arg if i.opname in ("YIELD_VALUE", "RESUME") else None) for i in ins[s:out + 1]], handler


@pytest.mark.skipif(not COMPILED, reason="no compiled path on this CPython")
def test_coroutine_prologue_awaits_with_this_versions_own_await_loop():
    # throw(), close() and cr_await read the loop's shape (3.12: the RESUME after YIELD_VALUE;
    # 3.13: YIELD_VALUE's argument; 3.12+: the CLEANUP_THROW handler of the YIELD_VALUE).
    async def f(x):
        return await x

    assert _prologue.ineligible(f.__code__) is None
    new, _ = _prologue.build(f.__code__, object())
    got, want = _await_loop(new), _await_loop(f.__code__)
    assert got == want
    if VERSION >= (3, 12):
        assert want[1] == ("CLEANUP_THROW", 2)
        # The StopIteration handler that starts at RESUME covers the prologue around it.
        stop = [e for e in dis.Bytecode(new).exception_entries if e.depth == 0 and e.lasti]
        assert stop and min(e.start for e in stop) == 4 and {e.target for e in stop} == {stop[0].target}


# ---- what the 3.12 normalisation (src/py312/normalise.rs) gives the lifter -----------------------

NORMALISED = textwrap.dedent("""\
    import poppy_jit
    from poppy_jit import poppy, unordered

    @unordered
    def llm(x):
        return f"<{x}>"

    @poppy
    def main(xs, k):
        a = [llm(x) for x in xs if x]                       # inlined comprehension (3.12)
        grid = [[llm(f"{r}{c}") for c in xs] for r in xs]   # nested
        fs = [lambda: t for t in xs]                        # a cell of the comprehension
        late = [f() for f in fs]
        s = {x[1:] for x in a if x not in {"<>", "<?>"}}    # slice, opaque constant
        v = k and len(a) or None                            # COPY/POP_JUMP → JUMP_IF_*_OR_POP
        while k > 0:                                        # backward conditional jump
            k -= 1
        return a, grid, late, sorted(s), v, xs[::-1], k

    print(main(["p", "q", ""], 3))
    print("x" if "x" in dir() else "no leak")
    print(poppy_jit.stats()["fallbacks"] if poppy_jit.is_enabled() else [])
    """)


def test_normalised_bytecode_compiles_and_runs_as_cpython(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(NORMALISED)
    plain, popped = run_file(path, poppy=False), run_file(path, poppy=True)
    assert plain.returncode == 0 and popped.returncode == 0, popped.stderr
    if COMPILED:
        assert popped.stdout == plain.stdout
    else:
        assert popped.stdout.splitlines()[:2] == plain.stdout.splitlines()[:2]


@pytest.mark.skipif(VERSION < (3, 12), reason="LOAD_SUPER_ATTR is 3.12's and 3.13's")
def test_construct_without_a_3_11_form_falls_back_naming_it():
    class Base:
        def hello(self):
            return "base"

    class Child(Base):
        def hello(self):
            return super().hello() + "!"

    reason = _core.explain(Child.hello)["fallback"]
    line = Child.hello.__code__.co_firstlineno + 1
    assert reason == f"super() attribute (LOAD_SUPER_ATTR) at line {line}"


# ---- what the 3.13 normalisation (src/py313/normalise.rs) gives the lifter -----------------------

NORMALISED_313 = textwrap.dedent("""\
    import poppy_jit
    from poppy_jit import poppy, unordered, sequential

    @unordered
    def llm(x, tone="plain", *, n=1):
        return f"<{x}:{tone}:{n}>"

    @sequential
    def log(*parts, sep=" "):
        print(*parts, sep=sep)

    class Box:
        def __init__(self, v):
            self.v = v

        def __repr__(self):
            return f"Box({self.v!r})"

    @poppy
    def main(xs, k, w):
        a = [llm(x, tone="warm", n=k) for x in xs if not x.startswith("-")]  # CALL_KW, TO_BOOL, not
        b = [f"{x!r} {x!s:>6} {x!a} {x:<{w}} {len(x):03d}" for x in xs]       # CONVERT_VALUE, FORMAT_*
        p, q = xs[0], xs[-1]                                                    # STORE_FAST_STORE_FAST
        q, p = p, q
        def pick(i, default=k, *, scale=w):                                     # SET_FUNCTION_ATTRIBUTE
            return i * scale + default + len(p)                                 # closure over p
        fn = (k > 1 and pick) or len                                            # PUSH_NULL after the callable
        c = fn(3)
        d = not (k < w)                                                         # COMPARE_OP to-bool bit
        log("done", p, q, sep="|")
        return a, b, c, d, Box(q), [pick(j) for j in range(k) if j != 1]

    print(main(["ab", "-c", "d"], 2, 4))
    print(poppy_jit.stats()["fallbacks"] if poppy_jit.is_enabled() else [])
    """)


def test_3_13_forms_compile_and_run_as_cpython(tmp_path):
    path = tmp_path / "prog.py"
    path.write_text(NORMALISED_313)
    plain, popped = run_file(path, poppy=False), run_file(path, poppy=True)
    assert plain.returncode == 0 and popped.returncode == 0, popped.stderr
    assert plain.stdout.splitlines()[-1] == "[]"
    if COMPILED:
        assert popped.stdout == plain.stdout, popped.stderr
    else:
        assert popped.stdout.splitlines()[:2] == plain.stdout.splitlines()[:2]


def test_conversion_with_a_computed_spec():
    """3.13 converts before it evaluates the spec, 3.11's and 3.12's FORMAT_VALUE after: each
    version compiles it in its own order (p640 checks the order and the results)."""
    def f(x, w):
        return f"{x!r:>{w}}"

    assert _core.explain(f)["fallback"] is None
    if VERSION == (3, 13):
        assert "op convert.repr(" in _core.explain(f)["bezoar"]


# ---- try statements 3.12 and 3.13 lay out otherwise than 3.11 (py312::handlers, py312::finally) ---

LAYOUTS = {
    # The code after a try/except/finally in a loop, after the finally clause's two copies (3.12
    # puts the exceptional one after the whole function, the code after the statement in the
    # normal copy's path: the loop's iterations then waited for each other; p624, p625).
    "try/except/finally in a loop": """
        def f(items):
            labels = []
            for it in items:
                try:
                    label = g(it)
                except KeyError:
                    label = h(it)
                else:
                    log(it)
                finally:
                    log(it)
                labels.append(label)
            return labels
    """,
    # A try/except whose handlers all raise, nested in a finally's body: 3.11 jumps over its
    # handler chain, which 3.12 put after the function (outside the finally's body).
    "a try whose handlers raise, in a finally's body": """
        def f(x):
            try:
                b = q(x)
                try:
                    a = g(b)
                except E:
                    a = 1
                    raise
                c = r(a)
            finally:
                k(x)
            return c
    """,
    # A `break` ending a try body in a `for` loop, `return y` after the loop: 3.12 copies the
    # return into the body after the iterator's pop, 3.11 jumps to it (py312::breaks).
    "a break ending a try body, a small return after the loop": """
        def f(xs):
            y = 0
            for x in xs:
                try:
                    y = g(x)
                    break
                except E:
                    h(x)
            return y
    """,
    # A try/except around a try/finally in a loop: the outer body ends with the finally's normal
    # copy and the loop's jump back, after which 3.11 has the outer chain (3.12's exceptional copy
    # of the finally, after the function, is no part of the outer body's code).
    "a try/except around a try/finally, in a loop": """
        def f(xs):
            out = []
            for x in xs:
                try:
                    try:
                        try:
                            v = g(x)
                        except KeyError:
                            if x == "bad":
                                raise
                            v = -1
                        out.append(v)
                    finally:
                        log(x)
                except KeyError as e:
                    out.append(e)
            return out
    """,
    # A finally clause ending with an `if`: its normal copy's jump to the code after the statement
    # goes to the jump over the exceptional copy, as 3.11's does (p621's `step`).
    "a finally clause ending with an if": """
        def f(kind, x):
            trail = []
            try:
                v = int(x)
            except (ValueError, KeyError) as e:
                if kind == "r":
                    raise
                v = -1
            else:
                trail.append("else")
            finally:
                trail.append("fin")
                if kind == "f":
                    raise LookupError(x)
            trail.append("after")
            return v, trail
    """,
    # A try/except/finally with an `as` handler, then a try whose body returns: the second
    # statement's chain goes after its return, not after the first handler's jump back (p621's
    # `names_after`).
    "a try/except/finally, then a try whose body returns": """
        def f(x):
            e = "before"
            try:
                y = int(x)
            except ValueError as e:
                y = str(e)
            finally:
                write("finally", x)
            try:
                return y, e
            except NameError as n:
                return y, repr(n)
    """,
    # Two try/finally statements in a try/except/finally's body (p623's `finally_inside`): 3.13
    # drops the line NOP that ends the outer body in 3.12, so the second finally's normal copy is
    # followed by the jump the normaliser adds for the outer statement; its exceptional copy goes
    # before that jump, behind a jump of its own, as in 3.11.
    "two try/finally statements in a try/except/finally's body, in a loop": """
        def f(keys):
            got = []
            for k in keys:
                try:
                    try:
                        got.append(k)
                    except IndexError:
                        got.append(1)
                    finally:
                        log(k)
                    try:
                        got.append(2)
                    finally:
                        log(3)
                except (ValueError, ZeroDivisionError) as e:
                    got.append(e)
                finally:
                    log(4)
            return got
    """,
}


@pytest.mark.parametrize("case", sorted(LAYOUTS))
def test_try_layouts_compile_on_every_version(case):
    ns = {}
    exec(compile(textwrap.dedent(LAYOUTS[case]), "<case>", "exec"), ns)
    assert _core.explain(ns["f"])["fallback"] is None


# The differential programs of the layouts 3.12/3.13 normalise into 3.11's (issue 21): the
# functions that fall back, by the versions where they do. The differential test checks that
# each program behaves as CPython does; this, that its functions compile where 3.11's do.
ALL = {(3, 11), (3, 12), (3, 13)}
PROGRAM_FALLBACKS = {
    # (`reraise_in_inner_body` fell back on 3.13 until the copies 3.13 gives each inner
    # handler's exit of the outer handler's continuation were shared: docs/versions.md.)
    "p623": {},
    "p630": {},
    "p631": {},
    "p634": {"returned_value_kept": ALL, "nested_finally": ALL},
    "p641": {},
    "p642": {},
    "p643": {},
    "p644": {},
    "p645": {},
}


@pytest.mark.skipif(not COMPILED, reason="the compiled path is not supported on this version")
@pytest.mark.parametrize("prefix", sorted(PROGRAM_FALLBACKS))
def test_normalised_programs_compile_as_on_3_11(prefix):
    import difftest

    [path] = [p for p in difftest.programs() if p.name.startswith(prefix + "_")]
    run = difftest.run_program(path, poppy=True)
    assert run.rc == difftest.directives(path).get("expect_rc", 0), run.stderr
    fell = {f["function"] for f in run.trace["poppy_stats"]["fallbacks"]}
    assert fell == {f for f, versions in PROGRAM_FALLBACKS[prefix].items() if VERSION in versions}
