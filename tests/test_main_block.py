"""The launched script's `if __name__ == "__main__":` block compiled (poppy_jit._mainblock):
each script runs as `python script.py` and as `python -m poppy_jit run script.py`, and
everything it prints, its exit code and its traceback must be the same — while the block's
external calls overlap."""
import subprocess
import sys
import textwrap

from subproc import poppy_env

PY = sys.executable


def _run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=poppy_env(False),
                          timeout=120, stdin=subprocess.DEVNULL)


def both(tmp_path, source, config=None, args=()):
    (tmp_path / "prog.py").write_text(textwrap.dedent(source))
    if config is not None:
        (tmp_path / "poppy.toml").write_text(textwrap.dedent(config))
    plain = _run([PY, "prog.py", *args], tmp_path)
    launched = _run([PY, "-m", "poppy_jit", "run", "--why", "prog.py", *args], tmp_path)
    return plain, launched


def _without_report(stderr: str) -> str:
    return stderr.split("poppy_jit: why calls did not overlap")[0]


def assert_same(plain, launched):
    assert launched.stdout == plain.stdout
    assert _without_report(launched.stderr) == plain.stderr
    assert launched.returncode == plain.returncode


PARALLEL = """\
    import sys, threading, time
    live = peak = 0
    lock = threading.Lock()

    def ask(q):
        global live, peak
        with lock:
            live += 1
            peak = max(peak, live)
        time.sleep(0.1)
        with lock:
            live -= 1
        return q.upper()

    def report():
        print("peak", peak, file=sys.stderr)

    if __name__ == "__main__":
        answers = []
        for i in range(4):
            a = ask(f"q{i}")
            answers.append(a)
            print(i, a)
        print(answers)
        report()
"""

CONFIG = """\
    [externals]
    "__main__:ask" = { kind = "unordered", blocking = true }
"""


def test_the_main_blocks_calls_overlap(tmp_path):
    plain, launched = both(tmp_path, PARALLEL, CONFIG)
    assert plain.returncode == 0, plain.stderr
    assert launched.stdout == plain.stdout
    assert "peak 1" in plain.stderr
    assert "peak 4" in launched.stderr  # all four calls of the loop were in flight together
    assert "main block of prog.py: lines 19–25 compiled;" in launched.stderr


SEMANTICS = """\
    import atexit, sys
    counter = 0

    def bump():                       # a global the block assigns, written by a function
        global counter
        counter += 1
        return counter

    def show():                       # a global the block assigns, read by a function
        return f"limit={limit}"

    @atexit.register
    def at_exit():                    # sees the block's variables it names at exit
        print("at exit", limit, counter)

    total = 5

    if __name__ == "__main__":
        total += 1                    # has a global value before the block: starts with it
        limit = 3
        print(show())
        for i in range(3):
            counter = counter + 10
            print(bump(), i)
        words = [w.upper() * total for w in ["a", "b"] if total > 2]
        total = 100
        print([w + str(total) for w in words])
        if len(sys.argv) > 3:
            late = 1                  # never bound: must not appear among the globals
        data = {"k": 1}
        del data["k"]
        import json
        print(json.dumps(words), data)
        if sys.argv[1:] == ["exit"]:
            sys.exit(3)
        if sys.argv[1:] == ["unbound"]:
            print(late)               # NameError, as module code raises it
        if sys.argv[1:] == ["raise"]:
            parsed = json.loads(words[0])
        import inspect                # introspection: from here on, module code
        print(sorted(k for k in dir() if not k.startswith("_")))
    print("after", total, i, words, "late" in dir())
"""


def test_variables_are_the_modules_after_the_block(tmp_path):
    plain, launched = both(tmp_path, SEMANTICS)
    assert plain.returncode == 0, plain.stderr
    assert_same(plain, launched)
    assert "main block of prog.py: lines 19–39 compiled (from line 40 it runs as module code: " \
           "it uses inspect (introspection))" in launched.stderr


def test_exit_name_error_and_traceback_as_cpython(tmp_path):
    for arg, rc in (("exit", 3), ("unbound", 1), ("raise", 1)):
        plain, launched = both(tmp_path, SEMANTICS, args=(arg,))
        assert plain.returncode == rc, plain.stderr
        assert_same(plain, launched)
    assert "NameError: name 'late' is not defined" in _run([PY, "prog.py", "unbound"],
                                                            tmp_path).stderr


def test_a_script_reaching_its_namespace_is_not_compiled(tmp_path):
    source = PARALLEL.replace("        report()", "        report()\n        print(len(globals()) > 0)")
    plain, launched = both(tmp_path, source, CONFIG)
    assert launched.stdout == plain.stdout
    assert "peak 1" in launched.stderr
    assert "main block of prog.py is not compiled: the script uses globals" in launched.stderr


def test_plain_launcher_compiles_nothing(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(PARALLEL))
    (tmp_path / "poppy.toml").write_text(textwrap.dedent(CONFIG))
    r = _run([PY, "-m", "poppy_jit", "run", "--plain", "prog.py"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert "peak 1" in r.stderr


def test_annotations_and_sys_modules(tmp_path):
    """A variable annotation ends the compiled statements (module code stores it in
    `__annotations__`, a function does not); a script using `sys.modules` (which reaches its own
    module) is not compiled at all."""
    source = """\
        import sys
        if __name__ == "__main__":
            a = [x * 2 for x in range(3)]
            b: int = len(a)
            print(a, b, __annotations__)
        print(sorted(__annotations__), a, b)
    """
    plain, launched = both(tmp_path, source)
    assert plain.returncode == 0, plain.stderr
    assert_same(plain, launched)
    assert "main block of prog.py: lines 3–3 compiled (from line 4 it runs as module code: a " \
           "variable annotation" in launched.stderr
    source = source.replace("print(sorted(", "print(len(sys.modules) > 0, sorted(")
    plain, launched = both(tmp_path, source)
    assert_same(plain, launched)
    assert "main block of prog.py is not compiled: the script uses its own module by name" \
        in launched.stderr


def test_a_failing_block_that_falls_back_keeps_the_traceback(tmp_path):
    """A block the compiler declines (a stored generator) runs as a plain function: its
    exception's traceback is the module's, as without the launcher."""
    source = """\
        def parse(s):
            return int(s)

        if __name__ == "__main__":
            words = ["1", "x"]
            gen = (parse(w) for w in words)
            print(next(gen))
            total = sum(gen)
    """
    plain, launched = both(tmp_path, source)
    assert plain.returncode == 1 and "ValueError" in plain.stderr
    assert launched.stdout == plain.stdout and launched.returncode == 1
    # the launched run also warns that the block fell back (a PoppyFallbackWarning)
    warning, _, rest = _without_report(launched.stderr).partition("\n  words = ")
    assert "PoppyFallbackWarning" in warning and "(run --why says which lines)" in warning
    assert rest.split("\n", 1)[1] == plain.stderr


def test_not_compiled_when_the_config_names_entries_elsewhere(tmp_path):
    """With an entry function named elsewhere, the block stays module code: compiled, it would
    reach the entry through a function that falls back, where the entry runs plainly (a nested
    run) — the config's entry must stay a run of its own."""
    (tmp_path / "searchlib.py").write_text(textwrap.dedent(PARALLEL.split("def report")[0]) +
                                           "\ndef search(n):\n    return [ask(f'q{i}') for i in range(n)]\n")
    source = """\
        import sys, searchlib

        def driver(n):
            try:                       # a fallback: the compiler has no exception handling
                return searchlib.search(n)
            finally:
                pass

        if __name__ == "__main__":
            print(driver(4))
            print("peak", searchlib.peak, file=sys.stderr)
    """
    config = """\
        [poppy]
        functions = ["searchlib:search"]
        [externals]
        "searchlib:ask" = { kind = "unordered", blocking = true }
    """
    plain, launched = both(tmp_path, source, config)
    assert plain.returncode == 0, plain.stderr
    assert launched.stdout == plain.stdout
    assert "peak 4" in launched.stderr
    assert "main block of prog.py is not compiled: the config names entry functions elsewhere " \
           "(searchlib:search)" in launched.stderr
