"""Globals and free variables rebound while a @poppy run goes on (issue 14, class 1) and the
identity of constants (class 5); the differential programs p160-p167 cover the behaviour, these
test the module scan and the guard directly."""
import subprocess
import sys
import textwrap

from poppy_jit import _rt


def _module(src):
    g = {"__name__": "scanned"}
    exec(textwrap.dedent(src), g)
    return g


def test_scan_finds_stored_and_deleted_globals_in_reachable_code():
    g = _module("""
        import functools
        def a():
            global X; X = 1
        def outer():
            def inner():
                global Y; del Y
            return inner
        class K:
            @staticmethod
            def s():
                global Z; Z = 2
            @property
            def p(self):
                global W; W = 3
        part = functools.partial(lambda: None)
    """)
    assert _rt.rebindable_globals(g, 1) == frozenset({"X", "Y", "Z", "W"})


def test_scan_is_everything_under_globals_or_setattr():
    g = _module("""
        def a():
            globals()["X"] = 1
    """)
    assert _rt.rebindable_globals(g, 1) is None


def test_guard_marks_the_name_and_the_second_call_is_right(tmp_path):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent("""
        import sys, types
        from poppy_jit import poppy
        MODE = "old"
        OTHER = types.ModuleType("other")
        exec("import sys\\nfrom poppy_jit import sequential\\n@sequential\\n"
             "def poke(v):\\n    setattr(sys.modules['__main__'], 'MODE', v)\\n", OTHER.__dict__)
        @poppy
        def run(v):
            OTHER.poke(v)
            return MODE
        try:
            print(run("new"))
        except RuntimeError as e:
            print("RuntimeError", "global 'MODE' was rebound by other.poke()" in str(e))
        print(run("newer"))
    """))
    env = {"PYTHONPOPPY": "1", "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env, timeout=60)
    assert out.stdout.split("\n")[:2] == ["RuntimeError True", "newer"], out.stderr
