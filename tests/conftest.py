"""Make `difftest` and `subproc` importable, and `poppy_jit` from the source tree when it is not
installed; then insist on the built extension `poppy_jit._core`: without it most tests would be
skipped or fail confusingly, so the run stops at once saying how to build it."""
import importlib.util
import sys
from pathlib import Path

import pytest

_here = Path(__file__).resolve().parent
if importlib.util.find_spec("poppy_jit") is None:
    sys.path.insert(0, str(_here.parent / "python"))
sys.path.insert(0, str(_here))


def pytest_configure(config):
    try:
        import poppy_jit._core  # noqa: F401
    except ImportError as e:
        root = _here.parent
        pytest.exit(
            f"poppy_jit._core cannot be imported ({type(e).__name__}: {e}).\n"
            "The tests need the built Rust extension. Build and install it into this interpreter:\n"
            f"    cd {root} && {sys.executable} -m pip install .\n"
            "or run the whole suite with scripts/test.sh, which builds and installs it first:\n"
            f"    cd {root} && PYTHON={sys.executable} bash scripts/test.sh",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
