"""Appending to a list the run created is linear (issue 17): an operation on an owned receiver
is ordered on that object alone, and it is not classified by the annotation library unless the
object escaped — classifying `out.append` walks the whole list (a deep mutability check with a
10,000-value budget), so a loop of appends was quadratic and, past the budget, sequential.

The test counts work (calls of the classifier that get the list), not time."""
import json
import subprocess
import sys
import textwrap

import pytest
from subproc import poppy_env

pytest.importorskip("poppy_jit._core")

PROG = textwrap.dedent('''
    import json, sys
    import poppy_jit
    from poppy_jit import _rt, poppy, sequential, unordered

    SEEN = {"classify": 0, "list_receiver": 0}
    _classify = _rt.classify

    def counting(f, args, kwnames):
        SEEN["classify"] += 1
        if type(getattr(f, "__self__", None)) is list:  # a list method: walks its receiver
            SEEN["list_receiver"] += 1
        return _classify(f, args, kwnames)

    _rt.classify = counting

    @sequential
    def show(xs):
        return len(xs)

    @unordered
    def square(i):
        return i * i

    @poppy
    def squares(n):
        out = []
        for i in range(n):
            out.append(square(i))   # an external call: the loop is not one internal region
        return sum(out)

    @poppy
    def escaped(n):
        out = []
        show(out)                # the list escapes: later appends follow the global order
        for i in range(n):
            out.append(i)
        return len(out)

    n = int(sys.argv[1])
    r1 = squares(n)
    local_counts = dict(SEEN)
    r2 = escaped(3)
    st = poppy_jit.stats() if poppy_jit.is_enabled() else {}
    print(json.dumps({"r": [r1, r2], "local": local_counts, "all": SEEN,
                      "object_local": st.get("object_local_calls")}))
''')


def _run(tmp_path, n, poppy=True):
    path = tmp_path / "prog.py"
    path.write_text(PROG)
    p = subprocess.run([sys.executable, str(path), str(n)], capture_output=True, text=True,
                       env=poppy_env(poppy), timeout=300)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_appends_to_an_owned_list_are_not_classified(tmp_path):
    # Past the classifier's 10,000-value budget too: every append stays object-local.
    n = 12_000
    got = _run(tmp_path, n)
    assert got["r"] == _run(tmp_path, n, poppy=False)["r"] == [sum(i * i for i in range(n)), 3]
    # Not per append: at most a few at the start of the loop (before the list is known to be
    # owned), against 12,000 (each walking the list) before.
    assert got["local"]["list_receiver"] <= 5, got
    assert got["object_local"] >= n
    # Once the list escaped, its appends are classified (and ordered) again.
    assert got["all"]["list_receiver"] >= 3, got
