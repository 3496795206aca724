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


def _run_poppy(tmp_path, src):
    prog = tmp_path / "prog.py"
    prog.write_text(textwrap.dedent(src))
    env = {"PYTHONPOPPY": "1", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, str(prog)], capture_output=True, text=True, env=env, timeout=60)


MODULE_TOOLS = """
    import sys, types
    tools = types.ModuleType("tools")
    exec("def fmt(x):\\n    return 'fmt:' + str(x)\\n", tools.__dict__)
    sys.modules["tools"] = tools
    def loud(x):
        return "LOUD:" + str(x)
"""


def test_module_attribute_rebound_by_an_async_external_fails_the_run_then_is_read_in_order(tmp_path):
    # The guard checks after async (and blocking) calls too, when the run collects them.
    out = _run_poppy(tmp_path, MODULE_TOOLS + """
    import asyncio
    from poppy_jit import poppy, sequential
    @sequential
    async def swap(f):
        await asyncio.sleep(0.01)
        tools.fmt = f
    @poppy
    def run(f):
        swap(f)
        return tools.fmt(1)
    original = tools.fmt
    try:
        print(run(loud))
    except RuntimeError as e:
        print("RuntimeError", "module attribute 'tools.fmt' was rebound by an asynchronous" in str(e))
    tools.fmt = original
    print(run(loud))
    """)
    assert out.stdout.split("\n")[:2] == ["RuntimeError True", "LOUD:1"], out.stderr


def test_module_attributes_holding_data_or_private_are_read_in_program_order(tmp_path):
    # No guard there: a sequential call rebinding them before the read is seen, as in CPython.
    out = _run_poppy(tmp_path, MODULE_TOOLS + """
    from poppy_jit import poppy, sequential
    tools.MODE = "old"
    exec("def _hidden():\\n    return 'old'\\n", tools.__dict__)
    @sequential
    def change():
        tools.MODE = "new"
        tools._hidden = lambda: "new"
    @poppy
    def run():
        change()
        return tools.MODE, tools._hidden()
    print(run())
    """)
    assert out.stdout.split("\n")[:1] == ["('new', 'new')"], out.stderr


def test_a_module_attribute_unchanged_by_the_calls_before_it_is_not_a_failure(tmp_path):
    # Calls that modify the module's dict without rebinding the name read: the version tag
    # changes, the name's object does not, the run goes on.
    out = _run_poppy(tmp_path, MODULE_TOOLS + """
    from poppy_jit import poppy, sequential
    @sequential
    def touch(i):
        setattr(tools, f"counter{i}", i)
    @poppy
    def run(n):
        out = []
        for i in range(n):
            touch(i)
            out.append(tools.fmt(i))
        return out
    print(run(3))
    """)
    assert out.stdout.split("\n")[:1] == ["['fmt:0', 'fmt:1', 'fmt:2']"], out.stderr
