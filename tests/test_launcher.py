"""`python -m poppy_jit run` (and the `poppy` console script) against plain `python script.py`:
the same argv, sys.path[0], __main__ globals, stdin, exit codes, tracebacks — each program is run
both ways in fresh interpreters and everything they print is compared."""
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from subproc import poppy_env

PY = sys.executable


def _write(tmp_path: Path, name: str, source: str) -> Path:
    p = tmp_path / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(textwrap.dedent(source))
    return p


def _run(cmd, cwd, stdin=None, env_extra=None, timeout=60):
    env = poppy_env(False)
    env.update(env_extra or {})
    return subprocess.run(cmd, cwd=cwd, input=stdin, capture_output=True, text=True, env=env,
                          timeout=timeout)


def both(tmp_path, script_args, stdin=None, launcher_opts=(), env_extra=None):
    """(plain, launched) CompletedProcesses of `python ARGS` and `python -m poppy_jit run ARGS`."""
    plain = _run([PY, *script_args], tmp_path, stdin, env_extra)
    launched = _run([PY, "-m", "poppy_jit", "run", *launcher_opts, *script_args], tmp_path, stdin,
                    env_extra)
    return plain, launched


def assert_same(plain, launched):
    assert launched.stdout == plain.stdout
    assert launched.stderr == plain.stderr
    assert launched.returncode == plain.returncode


INTROSPECT = """\
    import os, sys, pickle
    class Point:
        def __init__(self, x): self.x = x
    print("argv", sys.argv)
    print("path0", sys.path[0])
    print("name", __name__, "file", __file__)
    print("globals", sorted(k for k in globals() if k.startswith("__")))
    print("spec", __spec__ and (__spec__.name, __spec__.origin), "cached", __cached__, "package", __package__)
    print("loader", type(__loader__).__name__, getattr(__loader__, "name", None))
    print("main is me", sys.modules["__main__"].__dict__ is globals())
    print("pickle", pickle.loads(pickle.dumps(Point(3))).x)
    print("doc", __doc__)
"""


def test_argv_path_and_main_globals(tmp_path):
    _write(tmp_path, "sub/intro.py", '"""the docstring"""\n' + textwrap.dedent(INTROSPECT))
    plain, launched = both(tmp_path, ["sub/intro.py", "a", "--flag", "-m", "x y"])
    assert plain.returncode == 0, plain.stderr
    assert "argv ['sub/intro.py', 'a', '--flag', '-m', 'x y']" in plain.stdout
    assert_same(plain, launched)


def test_module_mode(tmp_path):
    _write(tmp_path, "pkg/__init__.py", "")
    _write(tmp_path, "pkg/tool.py", textwrap.dedent(INTROSPECT))
    plain, launched = both(tmp_path, ["-m", "pkg.tool", "one", "two"])
    assert plain.returncode == 0, plain.stderr
    assert_same(plain, launched)
    plain, launched = both(tmp_path, ["-m", "pkg.missing"])
    assert plain.returncode == 1
    assert_same(plain, launched)


def test_package_main_and_directory(tmp_path):
    _write(tmp_path, "app/__main__.py", "import sys\nprint('main of app', sys.argv[1:], __name__)\n")
    plain, launched = both(tmp_path, ["app", "z"])
    assert plain.returncode == 0, plain.stderr
    assert_same(plain, launched)


@pytest.mark.parametrize("body, rc", [
    ("print('ok')", 0),
    ("import sys; sys.exit(3)", 3),
    ("raise SystemExit('bye: message on stderr')", 1),
    ("raise SystemExit(None)", 0),
    ("import sys; print('x'); sys.exit(0)", 0),
    ("exit(7)", 7),
])
def test_exit_codes(tmp_path, body, rc):
    _write(tmp_path, "ex.py", body + "\n")
    plain, launched = both(tmp_path, ["ex.py"])
    assert plain.returncode == rc
    assert_same(plain, launched)


def test_uncaught_exception_traceback(tmp_path):
    _write(tmp_path, "boom.py", """\
        import atexit
        atexit.register(print, "atexit ran")
        def inner(x):
            return {}[x]
        def outer():
            try:
                inner("k")
            except KeyError as e:
                raise ValueError("wrapped") from e
        print("before")
        outer()
    """)
    plain, launched = both(tmp_path, ["boom.py"])
    assert plain.returncode == 1 and "ValueError: wrapped" in plain.stderr
    assert "poppy_jit" not in launched.stderr and "runpy" not in launched.stderr
    assert_same(plain, launched)


def test_module_mode_traceback(tmp_path):
    _write(tmp_path, "modboom.py", "def f():\n    1/0\nf()\n")
    plain, launched = both(tmp_path, ["-m", "modboom"])
    assert plain.returncode == 1 and "ZeroDivisionError" in plain.stderr
    assert_same(plain, launched)


def test_syntax_error_and_missing_file(tmp_path):
    _write(tmp_path, "syn.py", "x = 1\ndef (:\n")
    plain, launched = both(tmp_path, ["syn.py"])
    assert plain.returncode == 1 and "SyntaxError" in plain.stderr
    assert_same(plain, launched)
    plain, launched = both(tmp_path, ["nowhere.py"])
    assert plain.returncode == 2
    assert_same(plain, launched)


def test_keyboard_interrupt_exit_status(tmp_path):
    _write(tmp_path, "kbd.py", "print('started', flush=True)\nraise KeyboardInterrupt\n")
    plain, launched = both(tmp_path, ["kbd.py"])
    assert plain.returncode == -signal.SIGINT
    assert_same(plain, launched)


def test_stdin_passthrough(tmp_path):
    _write(tmp_path, "echo.py", """\
        import sys
        name = input("name? ")
        rest = sys.stdin.read()
        print("hello", name, "|", rest.upper(), "|", sys.stdin.isatty())
    """)
    plain, launched = both(tmp_path, ["echo.py"], stdin="ada\nline two\nline three\n")
    assert "hello ada" in plain.stdout
    assert_same(plain, launched)


def test_excepthook_of_the_program_sees_its_own_frames(tmp_path):
    _write(tmp_path, "hook.py", """\
        import sys, traceback
        def hook(t, v, tb):
            print("hook:", [f.name for f in traceback.extract_tb(tb)], v)
        sys.excepthook = hook
        def f():
            raise RuntimeError("x")
        f()
    """)
    plain, launched = both(tmp_path, ["hook.py"])
    assert "hook: ['<module>', 'f'] x" in plain.stdout
    assert_same(plain, launched)


def test_console_script(tmp_path):
    poppy = shutil.which("poppy", path=os.path.dirname(PY))
    if poppy is None:
        pytest.skip("the `poppy` console script is not installed next to this interpreter")
    _write(tmp_path, "c.py", "import sys\nprint(sys.argv, sys.path[0])\nsys.exit(int(sys.argv[1]))\n")
    plain = _run([PY, "c.py", "4"], tmp_path)
    for cmd in ([poppy, "c.py", "4"], [poppy, "run", "c.py", "4"]):
        assert_same(plain, _run(cmd, tmp_path))


def test_usage_errors(tmp_path):
    r = _run([PY, "-m", "poppy_jit", "run"], tmp_path)
    assert r.returncode == 2 and "missing the script" in r.stderr
    r = _run([PY, "-m", "poppy_jit", "run", "--bogus", "x.py"], tmp_path)
    assert r.returncode == 2 and "unknown option" in r.stderr
    r = _run([PY, "-m", "poppy_jit", "run", "--help"], tmp_path)
    assert r.returncode == 0 and "usage:" in r.stdout


# ---------------------------------------------------------------------------------------------
# The runtime is on, the config applies to the program's own functions

PARALLEL_SCRIPT = """\
    import sys, threading, time
    live = 0
    peak = 0
    lock = threading.Lock()

    class Model:
        def ask(self, prompt):
            global live, peak
            with lock:
                live += 1
                peak = max(peak, live)
            time.sleep(0.2)
            with lock:
                live -= 1
            return prompt.upper()

    def ask(prompt):
        return Model().ask(prompt)

    def main(n):
        return [ask(f"q{i}") for i in range(n)]

    if __name__ == "__main__":
        print(main(int(sys.argv[1])))
        import poppy_jit
        if poppy_jit.is_enabled():
            st = poppy_jit.stats()
            print("compiled", st["functions_compiled"], "fallbacks", len(st["fallbacks"]),
                  file=sys.stderr)
            print("peak", peak, file=sys.stderr)
"""

CONFIG = """\
    [poppy]
    functions = ["__main__:main"]

    [externals]
    "__main__:ask" = { kind = "unordered", blocking = true }
"""


def test_config_names_the_scripts_own_functions(tmp_path):
    _write(tmp_path, "par.py", PARALLEL_SCRIPT)
    _write(tmp_path, "poppy.toml", CONFIG)
    plain = _run([PY, "par.py", "4"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    launched = _run([PY, "-m", "poppy_jit", "run", "--config", "poppy.toml", "par.py", "4"],
                    tmp_path)
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout == plain.stdout
    # main and the main block's first statement (which calls it) are compiled
    assert "compiled 2 fallbacks 0" in launched.stderr
    assert "peak 4" in launched.stderr  # the four blocking calls were in flight together
    # poppy.toml in the current directory is the default config; --plain runs plain CPython
    default = _run([PY, "-m", "poppy_jit", "run", "par.py", "4"], tmp_path)
    assert default.stdout == plain.stdout and "peak 4" in default.stderr
    plain_run = _run([PY, "-m", "poppy_jit", "run", "--plain", "par.py", "4"], tmp_path)
    assert plain_run.stdout == plain.stdout and plain_run.stderr == ""


def test_config_static_and_class_methods_stay_methods(tmp_path):
    # A staticmethod/classmethod/method named in the config is annotated as what it is: the
    # program runs unchanged (it used to fail with a TypeError, even in plain mode).
    _write(tmp_path, "meth.py", """\
        class Fmt:
            prefix = "P"
            @staticmethod
            def s(x):
                return f"s{x}"
            @classmethod
            def c(cls, x):
                return f"{cls.prefix}{x}"
            def m(self, x):
                return f"m{x}"
        def main():
            f = Fmt()
            return [Fmt.s(1), f.s(2), Fmt.c(3), f.c(4), f.m(5), Fmt.m(f, 6)]
        print(main())
    """)
    _write(tmp_path, "m.toml", """\
        [poppy]
        functions = ["__main__:main"]
        [externals]
        "__main__:Fmt.s" = "unordered"
        "__main__:Fmt.c" = "readonly"
        "__main__:Fmt.m" = { kind = "unordered", blocking = true }
    """)
    plain = _run([PY, "meth.py"], tmp_path)
    assert plain.returncode == 0, plain.stderr
    for opts in (["--plain"], []):
        r = _run([PY, "-m", "poppy_jit", "run", "--config", "m.toml", *opts, "meth.py"], tmp_path)
        assert (r.stdout, r.stderr, r.returncode) == (plain.stdout, plain.stderr, 0)


def test_blocking_threads_setting(tmp_path):
    _write(tmp_path, "cap.py", PARALLEL_SCRIPT)
    _write(tmp_path, "cap.toml", textwrap.dedent(CONFIG).replace("[poppy]\n",
                                                                 "[poppy]\nblocking_threads = 2\n"))
    r = _run([PY, "-m", "poppy_jit", "run", "--config", "cap.toml", "cap.py", "6"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "peak 2" in r.stderr


def test_why_says_what_of_the_scripts_top_level_code_is_compiled(tmp_path):
    """The main block's leading statements are compiled up to one that uses introspection (here
    poppy_jit itself); `run --why` says which lines, and where module code resumes. Top-level code
    without a main block is not compiled, and the report says so."""
    _write(tmp_path, "par.py", PARALLEL_SCRIPT)
    _write(tmp_path, "poppy.toml", CONFIG)
    plain = _run([PY, "par.py", "4"], tmp_path)
    launched = _run([PY, "-m", "poppy_jit", "run", "--why", "par.py", "4"], tmp_path)
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout == plain.stdout
    assert "main block of par.py: lines 24–24 compiled (from line 25 it runs as module code: " \
           "it uses poppy_jit (introspection))" in launched.stderr
    _write(tmp_path, "flat.py", PARALLEL_SCRIPT.replace('if __name__ == "__main__":', "if True:"))
    plain = _run([PY, "flat.py", "4"], tmp_path)
    launched = _run([PY, "-m", "poppy_jit", "run", "--why", "flat.py", "4"], tmp_path)
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout == plain.stdout
    assert "top-level code of flat.py is not compiled (module code without an" in launched.stderr


def test_trace_option_writes_the_trace(tmp_path):
    """`run --trace FILE` records the external calls and writes the file at exit (it crashed
    before the program started)."""
    import json

    _write(tmp_path, "par.py", PARALLEL_SCRIPT)
    _write(tmp_path, "poppy.toml", CONFIG)
    plain = _run([PY, "par.py", "3"], tmp_path)
    launched = _run([PY, "-m", "poppy_jit", "run", "--trace", "t.json", "par.py", "3"], tmp_path)
    assert launched.returncode == 0, launched.stderr
    assert launched.stdout == plain.stdout
    events = json.loads((tmp_path / "t.json").read_text())["traceEvents"]
    asks = [e for e in events if e.get("cat") == "external" and e["name"].endswith("ask")]
    assert len(asks) == 3
