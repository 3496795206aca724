"""Interception of @poppy frames: with another PEP 523 eval-frame user installed before or after
poppy_jit (which installs none), zero-edit mode (PYTHONPOPPY_CONFIG), the code prologue, and
tracebacks of failed runs."""
import os
import shutil
import subprocess
import sys
import sysconfig
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("poppy_jit._core")

SUPPORT = Path(__file__).parent / "support"


@pytest.fixture(scope="module")
def chainer(tmp_path_factory):
    """Build the test-only PEP 523 extension (tests/support/chainer.c) with the system compiler."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler")
    out = tmp_path_factory.mktemp("chainer")
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    subprocess.run([cc, "-shared", "-fPIC", "-O1", f"-I{sysconfig.get_paths()['include']}",
                    str(SUPPORT / "chainer.c"), "-o", str(out / f"chainer{suffix}")], check=True)
    return out


PROGRAM = """
import asyncio, sys
sys.path.insert(0, {chainer_dir!r})
import chainer
{before}
import poppy_jit
from poppy_jit import poppy, unordered
{after}

@unordered
async def fetch(x):
    await asyncio.sleep(0.05)
    return x * 2

def plain(n):
    return sum(range(n))

@poppy
def main():
    a = fetch(1)
    b = fetch(2)
    print(a + b, plain(10))

main()
print("poppy runs", poppy_jit.stats()["runs"], "peak", poppy_jit.stats()["peak_in_flight"])
print("chained frames seen", chainer.count() > 0)
{tail}
"""


def run(chainer_dir, before="", after="", tail=""):
    src = PROGRAM.format(chainer_dir=str(chainer_dir), before=before, after=after, tail=tail)
    env = dict(os.environ, PYTHONPOPPY="1")
    return subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env,
                          timeout=60)


def assert_ran_compiled(stdout):
    """One compiled run, with the two fetches in flight together."""
    line = [l for l in stdout.splitlines() if l.startswith("poppy runs")][0]
    _, _, runs, _, peak = line.split()
    assert runs == "1" and int(peak) >= 2, line


def test_poppy_installed_after_another_evaluator_chains_to_it(chainer):
    p = run(chainer, before="chainer.install()")
    assert p.returncode == 0, p.stderr
    assert "6 45" in p.stdout
    assert_ran_compiled(p.stdout)
    assert "chained frames seen True" in p.stdout


def test_another_evaluator_on_top_of_poppy_still_reaches_it(chainer):
    tail = textwrap.dedent("""
        # poppy_jit installs no eval-frame function, so disabling it leaves the other one alone.
        poppy_jit.disable()
        print("disabled", not poppy_jit.is_enabled())
        n = chainer.count()
        plain(3)
        print("other evaluator still sees frames", chainer.count() > n)
        print("plain again", main() is None, poppy_jit.stats()["runs"])
        poppy_jit.enable()
        main()
        print("enabled again", poppy_jit.stats()["runs"])
        chainer.uninstall()
    """)
    p = run(chainer, after="chainer.install()", tail=tail)
    assert p.returncode == 0, p.stderr
    assert "6 45" in p.stdout
    assert_ran_compiled(p.stdout)
    assert "disabled True" in p.stdout
    assert "other evaluator still sees frames True" in p.stdout
    assert "plain again True 1" in p.stdout  # after disable() main() ran in CPython
    assert "enabled again 2" in p.stdout


def test_no_eval_frame_function_is_installed():
    """Interception is by code-object prologue: unannotated code keeps CPython's inlined,
    specialised calls (a PEP 523 function would disable both for all code)."""
    src = textwrap.dedent("""
        import ctypes, dis, sys
        import poppy_jit
        from poppy_jit import poppy, unordered
        api = ctypes.pythonapi
        api.PyInterpreterState_Get.restype = ctypes.c_void_p
        api._PyInterpreterState_GetEvalFrameFunc.restype = ctypes.c_void_p
        api._PyInterpreterState_GetEvalFrameFunc.argtypes = [ctypes.c_void_p]
        default = api._PyInterpreterState_GetEvalFrameFunc(api.PyInterpreterState_Get())

        @unordered
        def ext(x):
            return x

        @poppy
        def f(x):
            return ext(x) + 1

        def leaf(x):
            return x + 1

        def caller(n):
            t = 0
            for i in range(n):
                t += leaf(i) + f(i)
            return t

        print("result", caller(300))
        now = api._PyInterpreterState_GetEvalFrameFunc(api.PyInterpreterState_Get())
        print("enabled", poppy_jit.is_enabled(), "eval frame unchanged", now == default)
        ops = [i.opname for i in dis.get_instructions(caller, adaptive=True)]
        print("specialised", "CALL_PY_EXACT_ARGS" in ops)
        print("runs", poppy_jit.stats()["runs"])
        # Code pickled by value (cloudpickle, dill) carries an inert prologue: runs plainly.
        import pickle, types
        consts = pickle.loads(pickle.dumps(f.__code__.co_consts))
        g = types.FunctionType(f.__code__.replace(co_consts=consts), globals())
        print("unpickled", g(4), poppy_jit.stats()["runs"])
    """)
    env = dict(os.environ, PYTHONPOPPY="1")
    p = subprocess.run([sys.executable, "-c", src], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "result 90300" in p.stdout
    assert "enabled True eval frame unchanged True" in p.stdout
    assert "specialised True" in p.stdout
    assert "runs 300" in p.stdout
    assert "unpickled 5 300" in p.stdout


ZERO_EDIT_MODULE = '''
import time

def ask(x):
    time.sleep(0.05)  # a blocking client call
    return f"<{x}>"

def shout(s):
    print(s.upper())

def pipeline(items):
    out = []
    for it in items:
        shout(it)
        out.append(ask(it))
    return out
'''

ZERO_EDIT_MAIN = '''
import asyncio, hashlib, sys
import zeromod
res = zeromod.pipeline(["a", "b", "c"])
print(res)
'''


def test_zero_edit_config_parallelises_an_unmodified_module(tmp_path):
    (tmp_path / "zeromod.py").write_text(ZERO_EDIT_MODULE)
    before = (tmp_path / "zeromod.py").read_bytes()
    cfg = tmp_path / "poppy.toml"
    cfg.write_text(textwrap.dedent('''
        [poppy]
        functions = ["zeromod:pipeline"]

        [externals]
        "zeromod:ask" = { kind = "unordered", blocking = true }
        "zeromod:shout" = "sequential"
    '''))
    main = tmp_path / "main.py"
    main.write_text(ZERO_EDIT_MAIN)
    # The unmodified program, without poppy_jit at all.
    original = subprocess.run([sys.executable, str(main)], capture_output=True, text=True,
                              cwd=tmp_path, timeout=60)
    runner = ("import poppy_jit, runpy, sys; sys.path.insert(0, sys.argv[1]); "
              "runpy.run_path(sys.argv[2], run_name='__main__'); "
              "s = poppy_jit.stats() if poppy_jit.is_enabled() else None; "
              "print('stats', s and (s['functions_compiled'], s['peak_in_flight']))")
    env = dict(os.environ, PYTHONPOPPY_CONFIG=str(cfg))
    plain = subprocess.run([sys.executable, "-c", runner, str(tmp_path), str(main)],
                           capture_output=True, text=True, env=env, timeout=60)
    env["PYTHONPOPPY"] = "1"
    popped = subprocess.run([sys.executable, "-c", runner, str(tmp_path), str(main)],
                            capture_output=True, text=True, env=env, timeout=60)
    assert plain.returncode == 0 and popped.returncode == 0, (plain.stderr, popped.stderr)
    body = lambda out: [l for l in out.splitlines() if not l.startswith("stats")]  # noqa: E731
    assert body(plain.stdout) == body(popped.stdout) == original.stdout.splitlines()
    assert original.stdout.splitlines() == ["A", "B", "C", "['<a>', '<b>', '<c>']"]
    assert "stats None" in plain.stdout
    assert "stats (1, 3)" in popped.stdout  # compiled, and the three asks overlapped
    assert (tmp_path / "zeromod.py").read_bytes() == before


def test_zero_edit_config_errors_are_clear(tmp_path):
    cfg = tmp_path / "bad.toml"
    cfg.write_text('[externals]\n"zeromod:ask" = "sometimes"\n')
    env = dict(os.environ, PYTHONPOPPY_CONFIG=str(cfg))
    p = subprocess.run([sys.executable, "-c", "import poppy_jit"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert p.returncode != 0
    assert "PYTHONPOPPY_CONFIG" in p.stderr and "sometimes" in p.stderr


# ---------------------------------------------------------------------------------------------
# Tracebacks: the @poppy frames a run replaced appear where CPython has them.

TRACEBACK_PROGRAM = '''
import asyncio, os, sys, time, traceback
import poppy_jit
from poppy_jit import poppy, sequential, unordered

@sequential
def ext(x):
    if x == 2:
        raise ValueError(f"bad {x}")
    return x

@unordered
async def aext(x):
    await asyncio.sleep(0.01)
    if x == 2:
        raise KeyError(x)
    return x

@unordered(blocking=True)
def bext(x):
    time.sleep(0.01)
    if x == 2:
        raise RuntimeError(x)
    return x

@poppy
def sync_case(n):
    a = ext(1)
    b = ext(n)
    return a + b

@poppy
def async_case(n):
    a = aext(1)
    b = aext(n)
    return a + b

@poppy
def blocking_case(n):
    a = bext(1)
    b = bext(n)
    return a + b

@poppy
def div_case(n):
    a = ext(1)
    return a / (n - 2)

@poppy
def getitem_case(n):
    d = {"a": ext(1)}
    return d["b"]

@poppy
def inner(n):
    x = ext(1)
    y = ext(n)
    return x + y

@poppy
def nested_case(n):
    a = ext(1)
    b = inner(n)
    return a + b

class K:
    @poppy
    def meth(self, n):
        a = ext(1)
        return ext(n) + a

def method_case(n):
    return K().meth(n)

@poppy
def unused_args_case(n, m=5, *, key="k"):
    a = ext(1)
    b = ext(n)
    return a + b

def outer_plain(case):
    return case(2)

# Frames of poppy_jit's own machinery (the decorator's wrapper, the event loop or worker thread
# that ran an external) differ by construction; everything else must be CPython's.
SKIP = ("/poppy_jit/", "/asyncio/", "/concurrent/", "/threading.py")

for case in [sync_case, async_case, blocking_case, div_case, getitem_case, nested_case,
             method_case, unused_args_case]:
    try:
        outer_plain(case)
        print(case.__name__, "no error")
    except Exception as e:
        text = traceback.format_exception(e)
        # (file, line, function) of each entry; the source line and carets are not compared
        # (for a failure of an operation rather than a call, which one of several on the line
        # failed is not known, and the entry has no carets).
        frames = [l.strip().splitlines()[0] for l in text if l.lstrip().startswith("File ")
                  and not any(s in l.splitlines()[0] for s in SKIP)]
        print(case.__name__, type(e).__name__, frames, getattr(e, "__notes__", None))
        tb = e.__traceback__
        while tb is not None:  # every frame is a working frame object
            # A dict, or on 3.13 the write-through proxy of PEP 667: either reads every local.
            assert all(isinstance(k, str) for k in dict(tb.tb_frame.f_locals))
            code = tb.tb_frame.f_code
            if code.co_filename == __file__ and code.co_name != "<module>":
                assert tb.tb_frame.f_lineno == tb.tb_lineno, (code.co_name, tb.tb_lineno)
            tb = tb.tb_next
if poppy_jit.is_enabled():
    s = poppy_jit.stats()
    print("STATS", s["runs"], s["fallbacks"], s["nested_plain_runs"])
'''


def test_traceback_frames_match_cpython(tmp_path):
    prog = tmp_path / "tbprog.py"
    prog.write_text(TRACEBACK_PROGRAM)
    env = dict(os.environ)
    env.pop("PYTHONPOPPY", None)
    plain = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env,
                           timeout=120)
    env["PYTHONPOPPY"] = "1"
    popped = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env,
                            timeout=120)
    assert plain.returncode == 0 and popped.returncode == 0, (plain.stderr, popped.stderr)
    p_lines = plain.stdout.splitlines()
    q_lines = [l for l in popped.stdout.splitlines() if not l.startswith("STATS")]
    assert len(p_lines) == 8
    for p, q in zip(p_lines, q_lines):
        assert p == q
    # Every case ran compiled (none fell back or ran nested), so the frames are the runtime's.
    assert "STATS 8 [] 0" in popped.stdout, popped.stdout
    # The @poppy function's own entry is there, at the failing call's line.
    sync = [l for l in q_lines if l.startswith("sync_case")][0]
    assert "in sync_case" in sync and "in ext" in sync and "None" in sync  # no fallback note
    nested = [l for l in q_lines if l.startswith("nested_case")][0]
    assert nested.index("in nested_case") < nested.index("in inner") < nested.index("in ext")


def test_stand_in_frame_has_arguments_and_free_variables():
    """The frame object standing for a replaced @poppy frame (poppy_jit._core._frame)."""
    from poppy_jit import _core  # not enabling the hook: only the frame helper is used

    def make(k):
        def f(a, b):
            c = a + b + k
            return c
        return f

    f = make(10)
    line = f.__code__.co_firstlineno + 1
    offsets = [2 * i for i, p in enumerate(f.__code__.co_positions()) if p[0] == line]
    frame = _core._frame(f, (1, 2), offsets[0])
    assert frame.f_code is f.__code__
    assert frame.f_lineno == line
    assert frame.f_globals is f.__globals__
    assert frame.f_locals == {"a": 1, "b": 2, "k": 10}
    import types
    tb = types.TracebackType(None, frame, offsets[0], line)
    assert tb.tb_frame is frame
    with pytest.raises(TypeError):
        _core._frame(len, (), -1)


def test_traceback_note_when_inlined_call_chain_is_unknown(tmp_path):
    """Where the chain of inlined @poppy calls cannot be reconstructed (recursion, a callee
    called through another name), the innermost frame is still shown and a note says what is
    missing."""
    prog = tmp_path / "amb.py"
    prog.write_text(textwrap.dedent('''
        import traceback
        from poppy_jit import poppy, sequential

        @sequential
        def ext(x):
            if x == 2:
                raise ValueError(x)
            return x

        @poppy
        def rec(n):
            if n == 0:
                return ext(2)
            return rec(n - 1) + 1

        @poppy
        def helper(x):
            return ext(x)

        @poppy
        def alias_caller(n):
            h = helper
            a = ext(1)
            return h(n) + a

        for f in (rec, alias_caller):
            try:
                f(2)
            except ValueError as e:
                print([fs.name for fs in traceback.extract_tb(e.__traceback__)
                       if "poppy_jit" not in fs.filename], getattr(e, "__notes__", None))
    '''))
    env = dict(os.environ, PYTHONPOPPY="1")
    p = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    rec, alias = p.stdout.splitlines()
    assert rec.startswith("['<module>', 'rec', 'ext']")
    assert "line 14 of rec; the frames of the inlined @poppy calls" in rec
    assert alias.startswith("['<module>', 'alias_caller', 'helper', 'ext']")
    assert "line 19 of helper" in alias and "from alias_caller are not shown" in alias


def test_prologue_keeps_the_body_exact():
    """poppy_jit._prologue.build: the body, its positions and exception handlers survive the
    rewrite; a declining prologue runs the original body in the same frame (many constants need
    EXTENDED_ARG; try/except/for/with in the body)."""
    import contextlib
    import dis
    import types

    from poppy_jit import _prologue

    class Decline:
        def __init__(self):
            self.seen = 0

        def __getitem__(self, key):
            self.seen += 1
            return _prologue.DECLINE

    ns = {}
    consts = ", ".join(f"'c{i}'" for i in range(300))
    exec(textwrap.dedent(f"""
        import contextlib
        def f(x, y=2, *rest, k=3, **kw):
            table = ({consts})
            total = 0
            for i in range(x):
                try:
                    if i == 1:
                        raise KeyError(i)
                    total += i * y
                except KeyError:
                    total -= 100
                finally:
                    total += 1
            with contextlib.suppress(ZeroDivisionError):
                total += 1 / 0
            return total, len(table), rest, k, kw
    """), ns)
    f = ns["f"]
    expected = [f(5), f(3, 4, 9, k=1, z=2)]
    original = f.__code__
    entry = Decline()
    new, sites = _prologue.build(original, entry)
    f.__code__ = new
    assert [f(5), f(3, 4, 9, k=1, z=2)] == expected
    assert entry.seen == 2
    # The body (relative jumps included) and its handlers follow the prologue unchanged.
    body = [(i.opname, i.arg, i.positions) for i in dis.get_instructions(original)][1:]
    ops = [(i.opname, i.arg, i.positions) for i in dis.get_instructions(new)]
    assert ops[0][0] == "RESUME" and body == ops[len(ops) - len(body) - len(sites):len(ops) - len(sites)]
    assert len(dis._parse_exception_table(new)) == len(dis._parse_exception_table(original))
    # Every line of the function, and every call, has a site for tracebacks.
    lines = {p[0] for p in original.co_positions() if p[0] is not None}
    assert {ln for ln, off in sites if off == -1} == lines
    assert all(isinstance(off, int) for off in sites.values())
    # Not eligible: generators, closures.
    def gen():
        yield 1
    k = 1
    def closure():
        return k
    assert _prologue.ineligible(gen.__code__)
    # A closure gets its prologue after COPY_FREE_VARS (its free variables are set up first).
    assert _prologue.ineligible(closure.__code__) is None
