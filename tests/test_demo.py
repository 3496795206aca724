"""`python -m poppy_jit.demo` end to end."""
import importlib.util
import os
import subprocess
import sys

import pytest

import poppy_jit

HAVE_CORE = importlib.util.find_spec("poppy_jit._core") is not None


def run_demo(*args):
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(poppy_jit.__file__)))
    env.pop("PYTHONPOPPY", None)
    return subprocess.run([sys.executable, "-m", "poppy_jit.demo", *args], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.skipif(not HAVE_CORE, reason="needs the compiled runtime")
def test_demo_outputs_match_and_poppy_is_faster():
    p = run_demo("--time-scale", "0.5")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs identical: yes" in p.stdout
    speedup = float(p.stdout.split("speed-up over plain: ")[1].split("x")[0])
    assert speedup > 2  # 8 independent excursions requests


@pytest.mark.skipif(HAVE_CORE, reason="the compiled runtime is installed")
def test_demo_without_core_runs_plain_half_and_reports_the_missing_runtime():
    p = run_demo("--time-scale", "0.2", "--region", "Europe")
    assert p.returncode == 1
    assert p.stdout.count("\n") > 16 and "Lisbon\nIn Lisbon," in p.stdout
    assert "plain :" in p.stdout
    assert "PYTHONPOPPY=1 run FAILED" in p.stderr and "pip install ." in p.stderr
