"""Make `difftest` and `subproc` importable, and `poppy_jit` from the source tree when it is not
installed; then insist on the built extension `poppy_jit._core`: without it most tests would be
skipped or fail confusingly, so the run stops at once saying how to build it.
POPPY_JIT_TESTS_WITHOUT_CORE=1 lets it go on: that is how the tests of what happens without the
extension (the ones skipped when it is installed) run."""
import importlib.util
import os
import sys
from pathlib import Path

import pytest

_here = Path(__file__).resolve().parent
if importlib.util.find_spec("poppy_jit") is None:
    sys.path.insert(0, str(_here.parent / "python"))
sys.path.insert(0, str(_here))


def pytest_configure(config):
    if os.environ.get("POPPY_JIT_TESTS_WITHOUT_CORE") == "1":
        return
    try:
        import poppy_jit._core  # noqa: F401
    except ImportError as e:
        root = _here.parent
        pytest.exit(
            f"poppy_jit._core cannot be imported ({type(e).__name__}: {e}).\n"
            "The tests need the built Rust extension. Build and install it into this interpreter:\n"
            f"    cd {root} && {sys.executable} -m pip install .\n"
            "or run the whole suite with scripts/test.sh, which builds and installs it first:\n"
            f"    cd {root} && PYTHON={sys.executable} bash scripts/test.sh\n"
            "(POPPY_JIT_TESTS_WITHOUT_CORE=1 runs anyway, for the tests of the missing-extension behaviour.)",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
