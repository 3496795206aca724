"""Running a test program in a fresh interpreter: PYTHONPOPPY is read at import time, so plain
and poppy runs each need their own process, with no PYTHONPOPPY* setting inherited from the
caller's environment."""
import os
import subprocess
import sys


def poppy_env(poppy: bool) -> dict:
    """os.environ without any PYTHONPOPPY* variable, plus PYTHONPOPPY=1 when `poppy`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHONPOPPY")}
    if poppy:
        env["PYTHONPOPPY"] = "1"
    return env


def run_file(path, poppy: bool, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run the Python file `path` to completion, capturing its output as text."""
    return subprocess.run([sys.executable, str(path)], capture_output=True, text=True,
                          env=poppy_env(poppy), timeout=timeout)
