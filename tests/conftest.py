"""Make `poppy_jit` importable from the source tree when it is not installed, and `difftest`."""
import importlib.util
import sys
from pathlib import Path

_here = Path(__file__).resolve().parent
if importlib.util.find_spec("poppy_jit") is None:
    sys.path.insert(0, str(_here.parent / "python"))
sys.path.insert(0, str(_here))
