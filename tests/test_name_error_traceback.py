"""A failed global look-up in compiled code shows as CPython shows it: the NameError carries
its `name` (so the traceback offers "Did you mean"), and the caret marks the name's load — in
the run's own frame and in an inlined callee's."""
import subprocess
import sys
import textwrap

from subproc import poppy_env

SCRIPT = """\
    import sys
    from poppy_jit import poppy

    total_count = 3

    @poppy
    def inner(n):
        print("inner", n)
        return n + total_cont

    @poppy
    def outer(n):
        print("outer", n)
        if sys.argv[1] == "own":
            return len(str(n)) + total_cont
        return inner(n)

    try:
        outer(1)
    except NameError as e:
        print("name", e.name)
    outer(2)
"""


def test_name_error_as_cpython(tmp_path):
    (tmp_path / "prog.py").write_text(textwrap.dedent(SCRIPT))
    for where in ("own", "inlined"):
        runs = [subprocess.run([sys.executable, "prog.py", where], cwd=tmp_path,
                               capture_output=True, text=True, env=poppy_env(on), timeout=60)
                for on in (False, True)]
        plain, poppy = runs
        assert plain.returncode == 1
        assert "Did you mean: 'total_count'?" in plain.stderr and "^^^^" in plain.stderr
        assert poppy.stdout == plain.stdout
        assert poppy.stderr == plain.stderr
        assert poppy.returncode == plain.returncode
