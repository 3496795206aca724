"""An allocation failure inside the runtime is the program's MemoryError, as under CPython, not a
process abort (src/oom.rs). The program doubles a list in a compiled loop until the address
space (limited for the child process) runs out."""
import os
import resource
import subprocess
import sys
import textwrap

import pytest

PROGRAM = textwrap.dedent("""
    from poppy_jit import poppy

    @poppy
    def grow(xs):
        for _ in range(40):
            xs.extend([6 for q in xs])
        return len(xs)

    try:
        print(grow([1, 2, 3]))
    except MemoryError:
        print("MemoryError caught")
        raise
""")

LIMIT = 1 << 30


def _limit():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT, LIMIT))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_AS")
@pytest.mark.parametrize("poppy", ["0", "1"])
def test_running_out_of_memory_raises_memory_error(tmp_path, poppy):
    path = tmp_path / "grow.py"
    path.write_text(PROGRAM)
    env = dict(os.environ, PYTHONPOPPY=poppy)
    r = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True,
                       timeout=300, preexec_fn=_limit)
    assert r.returncode == 1, (r.returncode, r.stderr[-2000:])
    assert "MemoryError caught" in r.stdout
    assert r.stderr.rstrip().splitlines()[-1].startswith("MemoryError"), r.stderr[-2000:]
    assert "memory allocation of" not in r.stderr
